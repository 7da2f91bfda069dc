"""Several queued uploads of one project ingested in one transaction: one claim of their rows,
one parse each, one statement each for their shared rows (ingest.store_batch), one UPDATE
marking them done, one commit.

Exactly once holds as for one upload: every claimed row stays locked FOR NO KEY UPDATE until
the commit that stores its run and marks it done; a worker that dies mid-batch rolls them all
back and they are queued again. What one upload does wrong stays its own: a report that fails
to parse is marked failed in the same transaction and the others are stored; a parser that
crashes on one upload leaves that one queued with the error on its attempt. A failure of the
batch's shared statements cannot be pinned on one upload: each spends an attempt (the error
on it), and an upload that was claimed before (it has attempt rows) is always ingested alone
(ingest.worker.process_next), so no upload can make another run out of attempts, and the one
at fault fails alone as it would have without batching.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pandas as pd
import psycopg

from ingest.claims import CLAIM, finish_failed, forget_attempts, record_error
from ingest.failures import describe, is_input_fault, is_transient
from ingest.heartbeat import Heartbeat
from ingest.merge import MergedRun
from ingest.model import ReportParseError
from ingest.parse_ahead import ParseAhead
from ingest.store import KnownTests, RunMetadata, prepare_run
from ingest.store_batch import store_runs
from ingest.upload_ingest import (
    Outcome,
    detect_after_commit,
    mark_changes,
    merged_upload,
    metadata_from_json,
    read_upload_files,
    upload_counts,
)
from ingest.worker import (
    Claim,
    ShutdownRequested,
    TransientFailure,
    WorkerConfig,
    process_one,
    report_outcome,
    worker_name,
)
from model.frames import labels_key

log = logging.getLogger("laptime.worker")

# The first claimed upload's project mates, never claimed before (no attempt rows: see the
# module's docstring), and not lately failed for a transient reason.
CLAIM_MATES = """
SELECT id, metadata, job, created_at FROM upload u
WHERE status = 'queued' AND project_id = %(project)s AND id <> %(first)s
  AND NOT (id = ANY(%(deferred)s))
  AND NOT EXISTS (SELECT 1 FROM upload_attempt a WHERE a.upload_id = u.id)
ORDER BY id LIMIT %(more)s
FOR NO KEY UPDATE SKIP LOCKED
"""

_CLAIMED_BEFORE = "SELECT EXISTS (SELECT 1 FROM upload_attempt WHERE upload_id = %s)"

_RECORD_ATTEMPTS = """
INSERT INTO upload_attempt (upload_id, worker)
SELECT u, %(worker)s FROM unnest(%(uploads)s::bigint[]) WITH ORDINALITY AS t(u, n) ORDER BY n
RETURNING id, upload_id
"""

# clock_timestamp(): now() would be the start of this (possibly long) transaction.
_MARK_DONE = """
UPDATE upload u SET status = 'done', run_id = d.run_id, counts = d.counts::jsonb,
    warnings = d.warnings::jsonb, attempts = 1, finished_at = clock_timestamp(),
    error_code = NULL, error_detail = NULL
FROM unnest(%(ids)s::bigint[], %(runs)s::bigint[], %(counts)s::text[], %(warnings)s::text[])
    AS d(id, run_id, counts, warnings)
WHERE u.id = d.id
"""


@dataclass(frozen=True)
class QueuedUpload:
    """A claimed upload row: what its ingest reads from it."""

    upload_id: int
    metadata: dict[str, Any]
    job: str | None
    received_at: datetime


def process_batch(
    conn: psycopg.Connection[Any],
    side: psycopg.Connection[Any],
    config: WorkerConfig,
    *,
    known_tests: KnownTests,
    heartbeat: Heartbeat | None = None,
    deferred: set[int] | None = None,
    parse_ahead: ParseAhead | None = None,
) -> list[int] | None:
    """Claim the next queued upload and up to `config.batch_uploads - 1` more of its project,
    and ingest them in one transaction; the ids processed, or None when the queue is empty.
    Without mates the upload goes through process_next. `known_tests` is `conn`'s memo;
    `parse_ahead` (ingest/parse_ahead.py) parses the next claim's uploads during this one.

    Raises TransientFailure when the database fails for a reason of the moment: nothing of
    the batch is stored, no attempt is spent, its uploads join `deferred`."""
    attempts: list[int] = []
    claims: list[Claim] = []
    outcomes: list[Outcome | None] = []
    try:
        with conn.transaction():
            row = conn.execute(CLAIM, {"deferred": list(deferred or ())}).fetchone()
            if row is None:
                return None
            first_id, project_id, slug, metadata, job, received_at = row
            uploads = [QueuedUpload(int(first_id), metadata, job, received_at)]
            if not _scalar(conn, _CLAIMED_BEFORE, first_id):
                mates = conn.execute(
                    CLAIM_MATES,
                    {
                        "project": project_id,
                        "first": first_id,
                        "deferred": list(deferred or ()),
                        "more": config.batch_uploads - 1,
                    },
                ).fetchall()
                uploads += [QueuedUpload(int(i), m, j, r) for i, m, j, r in mates]
            if len(uploads) > 1:
                started = time.monotonic()
                claims = [
                    Claim(u.upload_id, slug or "", u.job or "default", started) for u in uploads
                ]
                attempts = _record_attempts(side, uploads, config.name or worker_name())
                if heartbeat is not None:
                    # A takeover names this one; the others' attempts make them go alone next.
                    heartbeat.set("ingesting", upload_id=first_id)
                outcomes = _ingest_batch(
                    conn, side, project_id, uploads, attempts, config, known_tests, parse_ahead
                )
    except ShutdownRequested:
        forget_attempts(side, attempts)
        raise
    except Exception as exc:
        if not attempts:
            raise
        known_tests.clear()  # the rollback undid what it remembers
        return _batch_failed(side, claims, attempts, exc, deferred)
    finally:
        if heartbeat is not None and attempts:
            heartbeat.set("idle", at_once=False)
    if not claims:
        # Alone (claimed before, or no mate queued): the single path, its own claim.
        return process_one(
            conn, side, config, heartbeat=heartbeat, known_tests=known_tests, deferred=deferred
        )
    for claim, outcome in zip(claims, outcomes, strict=True):
        if outcome is not None:
            report_outcome(claim, outcome)  # committed: only now does it count
    detect_after_commit(conn, outcomes)
    return [claim.upload_id for claim in claims]


def _scalar(conn: psycopg.Connection[Any], sql: str, *params: object) -> Any:
    row = conn.execute(sql, params).fetchone()
    assert row is not None
    return row[0]


def _record_attempts(
    side: psycopg.Connection[Any], uploads: list[QueuedUpload], name: str
) -> list[int]:
    """One attempt row per upload, committed at once (they outlive a killed worker)."""
    ids = [u.upload_id for u in uploads]
    rows = {
        int(upload): int(attempt)
        for attempt, upload in side.execute(
            _RECORD_ATTEMPTS, {"worker": name, "uploads": ids}
        ).fetchall()
    }
    return [rows[i] for i in ids]


def _ingest_batch(
    conn: psycopg.Connection[Any],
    side: psycopg.Connection[Any],
    project_id: int,
    uploads: list[QueuedUpload],
    attempts: list[int],
    config: WorkerConfig,
    known_tests: KnownTests,
    parse_ahead: ParseAhead | None,
) -> list[Outcome | None]:
    """Parse each upload (or take it parsed ahead), store the parsed ones together and mark
    them done, inside the claim's transaction; each upload's outcome (None: left queued, its
    error recorded)."""
    ids = [u.upload_id for u in uploads]
    runners = {u.upload_id: u.metadata.get("runner") for u in uploads}
    taken = parse_ahead.take(ids) if parse_ahead is not None else {}
    ahead = {i: early for i, early in taken.items() if early.runner == runners[i]}
    files = read_upload_files(conn, [i for i in ids if i not in ahead])
    outcomes: list[Outcome | None] = [None] * len(uploads)
    parsed: list[tuple[int, MergedRun, int]] = []  # index, merged run, files
    metas: dict[int, RunMetadata] = {}
    storables: dict[int, tuple[pd.DataFrame, list[str]]] = {}  # made by parse-ahead
    for i, upload in enumerate(uploads):
        if upload.upload_id in ahead:
            early = ahead[upload.upload_id]
            parsed.append((i, early.merged, early.files))
            metas[i] = _metadata(upload)
            storables[i] = early.storable()
            continue
        try:
            merged = merged_upload(
                files[upload.upload_id], config.limits, runners[upload.upload_id]
            )
        except ReportParseError as exc:
            finish_failed(conn, upload.upload_id, 1, exc.code, exc.describe())
            outcomes[i] = Outcome("failed", code=exc.code)
            continue
        except Exception as exc:
            # A parser bug: this upload alone spends the attempt and waits for a retry.
            record_error(side, attempts[i], describe(exc))
            log.error("ingest of upload %s failed", upload.upload_id, exc_info=exc)
            continue
        if merged is None:
            # The API never queues one, but a run of nothing would count as a job that ran.
            finish_failed(
                conn, upload.upload_id, 1, "no-report-files", "the upload holds no report files"
            )
            outcomes[i] = Outcome("failed", code="no-report-files")
            continue
        parsed.append((i, merged, len(files[upload.upload_id])))
        metas[i] = _metadata(upload)
    if parse_ahead is not None and len(uploads) == config.batch_uploads:
        # A full batch: more are likely queued. The next claim's uploads are parsed while this
        # batch's statements wait on the database.
        parse_ahead.start(conn, exclude=ids)
    if not parsed:
        return outcomes
    # Cells are created in one order by every batch (two batches creating two new cells in
    # opposite orders would deadlock); one cell's runs keep their upload order.
    prepared = {
        i: prepare_run(
            conn,
            project_id=project_id,
            upload_id=uploads[i].upload_id,
            meta=metas[i],
            merged=merged,
            storable=storables.get(i),
        )
        for i, merged, _ in sorted(parsed, key=lambda p: (_cell_key(metas[p[0]]), p[0]))
    }
    # The shared rows in upload order: a test's latest markers are the last upload's.
    runs = [prepared[i] for i, _, _ in parsed]
    stored = store_runs(conn, project_id=project_id, runs=runs, known_tests=known_tests)
    marked = [mark_changes(conn, project_id, result) for result in stored]
    conn.execute(
        _MARK_DONE,
        {
            "ids": [uploads[i].upload_id for i, _, _ in parsed],
            "runs": [result.run_id for result in stored],
            "counts": [
                json.dumps(upload_counts(result, merged, n))
                for (_, merged, n), result in zip(parsed, stored, strict=True)
            ],
            "warnings": [
                json.dumps([*result.warnings, *merged.warnings][:200])
                for (_, merged, _), result in zip(parsed, stored, strict=True)
            ],
        },
    )
    for (i, _, _), result, mark in zip(parsed, stored, marked, strict=True):
        outcomes[i] = Outcome("done", rows=result.results, marked=mark)
    return outcomes


def _metadata(upload: QueuedUpload) -> RunMetadata:
    return metadata_from_json(
        upload.metadata, upload.job or "default", received_at=upload.received_at
    )


def _cell_key(meta: RunMetadata) -> tuple[str, str, str, str]:
    return (meta.job, meta.machine or "", meta.branch or "", labels_key(meta.labels))


def _batch_failed(
    side: psycopg.Connection[Any],
    claims: list[Claim],
    attempts: list[int],
    exc: Exception,
    deferred: set[int] | None,
) -> list[int]:
    """After a batch rolled back: a transient fault spends nothing (TransientFailure); any
    other spends one attempt of each upload, which then goes alone."""
    upload_ids = [claim.upload_id for claim in claims]
    if is_transient(exc):
        if deferred is not None:
            deferred.update(upload_ids)
        pending = list(attempts)
        forget_attempts(side, pending)
        raise TransientFailure(describe(exc), pending) from exc
    detail = f"in a batch of {len(claims)} uploads: {describe(exc)}"
    for attempt in attempts:
        record_error(side, attempt, detail)
    if is_input_fault(exc):
        log.warning("batch of uploads %s refused by the database: %s", upload_ids, exc)
    else:
        log.error("ingest of the batch of uploads %s failed", upload_ids, exc_info=exc)
    return upload_ids
