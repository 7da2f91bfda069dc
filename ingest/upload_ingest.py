"""One claimed upload's ingest, inside its claim's transaction: its files parsed and merged
into one run, the run stored, marked for change detection, the upload marked done or failed
with its counts and warnings; and, once committed, the marked run's detection.

The worker (ingest/worker.py) claims, loops, retries and shuts down; ingest/batch.py stores
several uploads of a project at once with the same pieces.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from ingest.change_detection import MarkedRun, RunToDetect, detect_marked, mark_run
from ingest.claims import drop_unspent, finish_failed
from ingest.merge import MergedRun, merge_reports
from ingest.model import ParsedReport, ReportParseError
from ingest.parsers import parse_report
from ingest.parsers.limits import ParseLimits
from ingest.run_files import run_groups
from ingest.store import KnownTests, RunMetadata, StoreResult, store_run


@dataclass(frozen=True)
class Outcome:
    """How a committed ingest ended: done with `rows` stored, or failed with `code`; a run
    marked for change detection, which the worker detects once the ingest committed."""

    status: str
    rows: int = 0
    code: str | None = None
    marked: MarkedRun | None = None


def metadata_from_json(
    raw: dict[str, Any], default_job: str, *, received_at: datetime | None = None
) -> RunMetadata:
    """Rebuild the run metadata stored on the upload row."""
    started = raw.get("started_at")
    return RunMetadata(
        job=raw.get("job") or default_job,
        pipeline=raw.get("pipeline"),
        commit=raw.get("commit"),
        branch=raw.get("branch"),
        machine=raw.get("machine"),
        labels=dict(raw.get("labels") or {}),
        started_at=datetime.fromisoformat(started) if started else None,
        wall_s=raw.get("wall_s"),
        peak_rss_mib=raw.get("peak_rss_mib"),
        job_wall_s=raw.get("job_wall_s"),
        received_at=received_at,
        backfill=bool(raw.get("backfill")),
        runner=raw.get("runner"),
        plan_id=raw.get("plan_id"),
        first_parents=tuple(str(c) for c in raw.get("first_parents") or ()),
        merged_requests=tuple(str(c) for c in raw.get("merged_requests") or ()),
    )


def ingest_upload(
    conn: psycopg.Connection[Any],
    upload_id: int,
    project_id: int,
    metadata: dict[str, Any],
    job: str | None,
    received_at: datetime,
    attempt_id: int,
    attempts: int,
    limits: ParseLimits | None,
    known_tests: KnownTests | None,
) -> Outcome:
    """Parse, store and mark done, inside the claim's transaction."""
    drop_unspent(conn, upload_id, keep=attempt_id)
    try:
        reports = _parse_files(conn, upload_id, limits, runner=metadata.get("runner"))
    except ReportParseError as exc:
        finish_failed(conn, upload_id, attempts, exc.code, exc.describe())
        return Outcome("failed", code=exc.code)
    if not reports:
        # The API never queues one, but a run of nothing would count as a job that ran.
        finish_failed(
            conn, upload_id, attempts, "no-report-files", "the upload holds no report files"
        )
        return Outcome("failed", code="no-report-files")
    merged = merge_upload(reports)
    meta = metadata_from_json(metadata, job or "default", received_at=received_at)
    stored = store_run(
        conn,
        project_id=project_id,
        upload_id=upload_id,
        meta=meta,
        merged=merged,
        known_tests=known_tests,
    )
    marked = mark_changes(conn, project_id, stored)
    counts = upload_counts(stored, merged, len(reports))
    # clock_timestamp(): now() would be the start of this (possibly long) transaction.
    conn.execute(
        """
        UPDATE upload SET status = 'done', run_id = %s, counts = %s, warnings = %s,
            attempts = %s, finished_at = clock_timestamp(), error_code = NULL,
            error_detail = NULL
        WHERE id = %s
        """,
        (
            stored.run_id,
            json.dumps(counts),
            json.dumps([*stored.warnings, *merged.warnings][:200]),
            attempts,
            upload_id,
        ),
    )
    return Outcome("done", rows=stored.results, marked=marked)


def merge_upload(reports: list[ParsedReport]) -> MergedRun:
    """The upload's reports as one run, warned when laptime's rule sees several runs."""
    merged = merge_reports(reports)
    groups = run_groups(reports)
    if len(groups) > 1:
        # The offline CLI would count these files as len(groups) runs: say how they differ.
        merged.warnings.append(
            f"the upload's {len(reports)} files hold {len(groups)} runs by laptime's rule "
            "(files of one format are separate runs): stored as one run, a test they repeat "
            "numbered as another execution"
        )
    return merged


def upload_counts(stored: StoreResult, merged: MergedRun, files: int) -> dict[str, int]:
    """The counts a done upload shows."""
    return {
        "results": stored.results,
        "new_tests": stored.new_tests,
        "missing_durations": stored.missing_durations,
        "hidden_rows": merged.hidden_rows,
        "files": files,
    }


def mark_changes(
    conn: psycopg.Connection[Any], project_id: int, stored: StoreResult
) -> MarkedRun | None:
    """Mark the run for change detection in the ingest's transaction (ingest/change_detection.py);
    the worker detects it after the commit (`detect_after_commit`)."""
    if not stored.branch:
        return None  # never the default branch's run
    run = RunToDetect(project_id, stored.cell_id, stored.run_id, stored.branch)
    if not mark_run(conn, run):
        return None
    return MarkedRun(run, stored.stored, stored.measures)


def detect_after_commit(conn: psycopg.Connection[Any], outcomes: list[Outcome | None]) -> None:
    """Detect the changes of the committed ingests' marked runs, each in its own short
    transaction: the uploads are done already, and a worker that dies here leaves the marks
    for the next pass (`retry_backlog`)."""
    marked = [o.marked for o in outcomes if o is not None and o.marked is not None]
    if marked:
        detect_marked(conn, marked)


def _parse_files(
    conn: psycopg.Connection[Any],
    upload_id: int,
    limits: ParseLimits | None,
    runner: str | None = None,
) -> list[ParsedReport]:
    return parse_upload_files(read_upload_files(conn, [upload_id])[upload_id], limits, runner)


def parse_upload_files(
    files: list[tuple[str, bytes]], limits: ParseLimits | None, runner: str | None
) -> list[ParsedReport]:
    """Parse an upload's (filename, raw) files in order."""
    reports = []
    for filename, raw in files:
        kwargs: dict[str, Any] = {"filename": filename}
        if limits is not None:
            kwargs["limits"] = limits
        if runner:  # the upload's `runner` field: selection units in that runner's terms
            kwargs["runner"] = runner
        reports.append(parse_report(bytes(raw), **kwargs))
    return reports


def read_upload_files(
    conn: psycopg.Connection[Any], upload_ids: list[int]
) -> dict[int, list[tuple[str, bytes]]]:
    """Each upload's (filename, raw) files in order (an upload with none: [])."""
    files: dict[int, list[tuple[str, bytes]]] = {i: [] for i in upload_ids}
    if not upload_ids:
        return files  # every upload of the batch parsed ahead: no round trip
    for upload_id, filename, raw in conn.execute(
        "SELECT upload_id, filename, raw_gzip FROM upload_file WHERE upload_id = ANY(%s) "
        "ORDER BY upload_id, position",
        (upload_ids,),
    ):
        files[int(upload_id)].append((filename, raw))
    return files


def merged_upload(
    files: list[tuple[str, bytes]], limits: ParseLimits | None, runner: str | None
) -> MergedRun | None:
    """An upload's files parsed and merged into one run; None when it holds none."""
    reports = parse_upload_files(files, limits, runner)
    return merge_upload(reports) if reports else None
