"""The ingestion worker: the upload row is the queue item.

A claim locks the row with FOR NO KEY UPDATE SKIP LOCKED and holds the lock for the whole
ingest transaction, which also stores the results and marks the upload done: exactly once.
A worker that dies mid-ingest rolls back and releases the row for the next worker. Claims are
counted on a side connection so that a poison upload fails after `max_attempts`.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from ingest.merge import merge_reports
from ingest.model import ParsedReport, ReportParseError
from ingest.parsers import parse_report
from ingest.parsers.limits import ParseLimits
from ingest.store import KNOWN_TESTS, RunMetadata, store_run

log = logging.getLogger("laptime.worker")

CHANNEL = "laptime_uploads"
# Set only by the crash-recovery test: the worker blocks just before committing an ingest.
FAULT_HANG_ENV = "LAPTIME_FAULT_HANG_BEFORE_COMMIT"


# Codes an upload can fail with besides its files' parse errors (docs/errors.md lists both).
WORKER_ERROR_CODES: dict[str, str] = {
    "ingest-gave-up": "workers claimed it max_attempts times without finishing",
    "no-report-files": "the upload holds no report file",
}


@dataclass(frozen=True)
class WorkerConfig:
    """How a worker behaves; built from Settings by the entry point."""

    max_attempts: int = 3
    poll_s: float = 5.0
    limits: ParseLimits | None = None
    name: str = ""


def worker_name() -> str:
    """host:pid, recorded on every claim."""
    return f"{socket.gethostname()}:{os.getpid()}"


def metadata_from_json(raw: dict[str, Any], default_job: str) -> RunMetadata:
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
        runner=raw.get("runner"),
    )


def process_next(
    conn: psycopg.Connection[Any], side: psycopg.Connection[Any], config: WorkerConfig
) -> int | None:
    """Claim and ingest one queued upload; returns its id, or None when the queue is empty."""
    name = config.name or worker_name()
    with conn.transaction():
        row = conn.execute(
            """
            SELECT id, project_id, metadata, job FROM upload
            WHERE status = 'queued' ORDER BY id LIMIT 1
            FOR NO KEY UPDATE SKIP LOCKED
            """
        ).fetchone()
        if row is None:
            return None
        upload_id, project_id, metadata, job = row
        attempts = _count_attempt(side, upload_id, name)
        if attempts > config.max_attempts:
            last = side.execute(
                "SELECT error FROM upload_attempt WHERE upload_id = %s AND error IS NOT NULL "
                "ORDER BY id DESC LIMIT 1",
                (upload_id,),
            ).fetchone()
            reason = last[0] if last else "the worker stopped while ingesting it"
            _finish_failed(
                conn,
                upload_id,
                attempts - 1,
                "ingest-gave-up",
                f"gave up after {attempts - 1} attempts; last error: {reason}",
            )
            return int(upload_id)
        try:
            reports = _parse_files(conn, upload_id, config, runner=metadata.get("runner"))
        except ReportParseError as exc:
            _finish_failed(conn, upload_id, attempts, exc.code, exc.describe())
            return int(upload_id)
        if not reports:
            # The API never queues one, but a run of nothing would count as a job that ran.
            _finish_failed(
                conn, upload_id, attempts, "no-report-files", "the upload holds no report files"
            )
            return int(upload_id)
        merged = merge_reports(reports)
        meta = metadata_from_json(metadata, job or "default")
        stored = store_run(
            conn, project_id=project_id, upload_id=upload_id, meta=meta, merged=merged
        )
        counts = {
            "results": stored.results,
            "new_tests": stored.new_tests,
            "missing_durations": stored.missing_durations,
            "hidden_rows": merged.hidden_rows,
            "files": len(reports),
        }
        conn.execute(
            """
            UPDATE upload SET status = 'done', run_id = %s, counts = %s, warnings = %s,
                attempts = %s, finished_at = now(), error_code = NULL, error_detail = NULL
            WHERE id = %s
            """,
            (
                stored.run_id,
                json.dumps(counts),
                json.dumps(merged.warnings[:200]),
                attempts,
                upload_id,
            ),
        )
        if os.environ.get(FAULT_HANG_ENV):
            # Fault injection for the crash test: everything is written, nothing committed.
            threading.Event().wait()
    return int(upload_id)


def _count_attempt(side: psycopg.Connection[Any], upload_id: int, name: str) -> int:
    side.execute(
        "INSERT INTO upload_attempt (upload_id, worker) VALUES (%s, %s)", (upload_id, name)
    )
    row = side.execute(
        "SELECT count(*) FROM upload_attempt WHERE upload_id = %s", (upload_id,)
    ).fetchone()
    assert row is not None
    return int(row[0])


def _parse_files(
    conn: psycopg.Connection[Any], upload_id: int, config: WorkerConfig, runner: str | None = None
) -> list[ParsedReport]:
    files = conn.execute(
        "SELECT filename, raw_gzip FROM upload_file WHERE upload_id = %s ORDER BY position",
        (upload_id,),
    ).fetchall()
    reports = []
    for filename, raw in files:
        kwargs: dict[str, Any] = {"filename": filename}
        if config.limits is not None:
            kwargs["limits"] = config.limits
        if runner:  # the upload's `runner` field (#17): selection units in that runner's terms
            kwargs["runner"] = runner
        reports.append(parse_report(bytes(raw), **kwargs))
    return reports


def _finish_failed(
    conn: psycopg.Connection[Any], upload_id: int, attempts: int, code: str, detail: str
) -> None:
    conn.execute(
        """
        UPDATE upload SET status = 'failed', error_code = %s, error_detail = %s, attempts = %s,
            finished_at = now()
        WHERE id = %s
        """,
        (code, detail[:4000], attempts, upload_id),
    )


def drain(
    conn: psycopg.Connection[Any], side: psycopg.Connection[Any], config: WorkerConfig
) -> int:
    """Process uploads until the queue is empty; returns how many were processed."""
    processed = 0
    while True:
        try:
            upload_id = process_next(conn, side, config)
        except Exception as exc:
            # Not the report's fault (a bug, a lost connection): the claim rolled back and
            # the upload stays queued for a retry; the error is kept for the give-up message.
            log.exception("ingest failed; the upload stays queued")
            KNOWN_TESTS.clear()
            _record_error(side, config.name or worker_name(), repr(exc))
            if conn.closed or conn.broken:
                raise
            continue
        if upload_id is None:
            return processed
        processed += 1


def _record_error(side: psycopg.Connection[Any], name: str, error: str) -> None:
    side.execute(
        "UPDATE upload_attempt SET error = %s "
        "WHERE id = (SELECT max(id) FROM upload_attempt WHERE worker = %s)",
        (error[:2000], name),
    )


def run_worker(dsn: str, config: WorkerConfig, stop: threading.Event) -> None:
    """Loop until `stop` is set: drain the queue, then sleep until NOTIFY or the poll timeout."""
    with (
        psycopg.connect(dsn) as conn,
        psycopg.connect(dsn, autocommit=True) as side,
        psycopg.connect(dsn, autocommit=True) as listener,
    ):
        listener.execute(f"LISTEN {CHANNEL}")
        while not stop.is_set():
            drain(conn, side, config)
            waited = 0.0
            # Short slices keep shutdown prompt; a NOTIFY ends the wait at once.
            while waited < config.poll_s and not stop.is_set():
                if any(True for _ in listener.notifies(timeout=0.5, stop_after=1)):
                    break
                waited += 0.5
