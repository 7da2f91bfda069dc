"""The ingestion worker: the upload row is the queue item.

A claim locks the row with FOR NO KEY UPDATE SKIP LOCKED and holds the lock for the whole
ingest transaction, which also stores the results and marks the upload done: exactly once.
A worker that dies mid-ingest rolls back and releases the row for the next worker; one that
stops beating while its connection lingers has its claim taken over (ingest/heartbeat.py).

Attempts are recorded on a side connection when a claim starts, so a report that crashes or
hangs every worker fails after `max_attempts`. Transient database errors (ingest/failures.py)
spend no attempt, even when the database cannot write (ingest/attempts.py): the worker backs
off, reconnects and goes on, and tries other queued uploads first; a database restart or a full
disk delays uploads, never fails them. The report's own faults fail it at once.

What one claimed upload's ingest does (parse, store, mark done) is ingest/upload_ingest.py;
the claim and attempt SQL is ingest/claims.py; here are the claim's transaction, the loop,
the connections, back-off and shutdown.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import psycopg

from ingest import metrics
from ingest.attempts import application_name
from ingest.background_compaction import BackgroundCompactor
from ingest.change_detection import retry_backlog
from ingest.claims import (
    CLAIM,
    attempts_so_far,
    drop_unspent,
    finish_failed,
    forget_attempts,
    record_attempt,
    record_error,
)
from ingest.failures import Backoff, describe, is_input_fault, is_transient
from ingest.heartbeat import Heartbeat, take_over_stale_claims
from ingest.parse_ahead import ParseAhead
from ingest.parsers.errors import ERROR_CODES
from ingest.parsers.limits import ParseLimits
from ingest.rollup_compaction import compact_backlog
from ingest.store import KnownTests
from ingest.upload_ingest import Outcome, detect_after_commit, ingest_upload

log = logging.getLogger("laptime.worker")

CHANNEL = "laptime_uploads"

# Codes an upload can fail with besides its files' parse errors (docs/errors.md lists both).
WORKER_ERROR_CODES: dict[str, str] = {
    "ingest-gave-up": "workers claimed it max_attempts times without finishing",
    "no-report-files": "the upload holds no report file",
    "store-rejected": "the database refused the report's data",
}
# The failure codes a metric label may carry: registered ones only, so its series stay few.
_FAILURE_CODES = frozenset(ERROR_CODES) | frozenset(WORKER_ERROR_CODES)


@dataclass(frozen=True)
class WorkerConfig:
    """How a worker behaves; built from Settings by the entry point."""

    max_attempts: int = 3
    poll_s: float = 5.0
    limits: ParseLimits | None = None
    name: str = ""
    heartbeat_s: float = 5.0
    # A claim whose worker has not beaten for this long is taken over.
    lease_s: float = 60.0
    backoff_first_s: float = 0.5
    backoff_cap_s: float = 10.0
    # Up to this many queued uploads of one project share one ingest transaction
    # (ingest/batch.py); 1 ingests each alone.
    batch_uploads: int = 1
    # With batches, a process of the worker parses the next claim's uploads while a batch is
    # stored (ingest/parse_ahead.py).
    parse_ahead: bool = False


class ShutdownRequested(KeyboardInterrupt):
    """Raised in the worker's thread to abandon an ingest at shutdown: it rolls back.

    A KeyboardInterrupt, so no `except Exception` mistakes it for an ingest failure that
    spends an attempt, and psycopg cancels the running query instead of leaving it running.
    """


@dataclass(frozen=True)
class Claim:
    """The upload a worker claimed, and what its log line and metrics name."""

    upload_id: int
    project: str
    job: str
    started: float  # time.monotonic() at the claim


class ClaimFailed(Exception):
    """An ingest failed after its claim was recorded; the cause is `__cause__`."""

    def __init__(self, claim: Claim, attempt_id: int, attempts: int) -> None:
        super().__init__(f"ingest of upload {claim.upload_id} failed")
        self.claim = claim
        self.upload_id = claim.upload_id
        self.attempt_id = attempt_id
        self.attempts = attempts


class TransientFailure(Exception):
    """The database failed for a reason of the moment; back off and try again."""

    def __init__(self, detail: str, attempt_ids: list[int]) -> None:
        super().__init__(detail)
        self.attempt_ids = attempt_ids


def worker_name() -> str:
    """host:pid, recorded on every claim."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_one(
    conn: psycopg.Connection[Any],
    side: psycopg.Connection[Any],
    config: WorkerConfig,
    *,
    heartbeat: Heartbeat | None,
    known_tests: KnownTests,
    deferred: set[int] | None,
) -> list[int] | None:
    """`process_next` as a batch of one: the upload it ingested, None when none was queued."""
    upload_id = process_next(
        conn,
        side,
        config,
        heartbeat=heartbeat,
        known_tests=known_tests,
        deferred=frozenset(deferred or ()),
    )
    return None if upload_id is None else [upload_id]


def process_next(
    conn: psycopg.Connection[Any],
    side: psycopg.Connection[Any],
    config: WorkerConfig,
    *,
    heartbeat: Heartbeat | None = None,
    known_tests: KnownTests | None = None,
    deferred: frozenset[int] = frozenset(),
) -> int | None:
    """Claim and ingest one queued upload; returns its id, or None when the queue is empty.
    `known_tests` is `conn`'s memo of written test cases (see store_run); uploads in
    `deferred` (lately failed for a transient reason) are claimed after every other one.

    Raises ClaimFailed (the cause chained) when the ingest fails after its attempt was recorded.
    """
    name = config.name or worker_name()
    claim: Claim | None = None
    attempt: tuple[int, int] | None = None  # attempt id, attempts counted
    try:
        with conn.transaction():
            row = conn.execute(CLAIM, {"deferred": list(deferred)}).fetchone()
            if row is None:
                return None
            upload_id, project_id, slug, metadata, job, received_at = row
            claim = Claim(int(upload_id), slug or "", job or "default", time.monotonic())
            spent, last_error = attempts_so_far(side, upload_id)
            if spent >= config.max_attempts:
                reason = last_error or "the worker stopped while ingesting it"
                drop_unspent(conn, upload_id, keep=None)
                finish_failed(
                    conn,
                    upload_id,
                    spent,
                    "ingest-gave-up",
                    f"gave up after {spent} attempts; last error: {reason}",
                )
                outcome = Outcome("failed", code="ingest-gave-up")
            else:
                attempt = (record_attempt(side, upload_id, name), spent + 1)
                if heartbeat is not None:
                    heartbeat.set("ingesting", upload_id=upload_id)
                outcome = ingest_upload(
                    conn,
                    upload_id,
                    project_id,
                    metadata,
                    job,
                    received_at,
                    *attempt,
                    config.limits,
                    known_tests,
                )
    except ShutdownRequested:
        if attempt is not None:
            forget_attempts(side, [attempt[0]])
        raise
    except Exception as exc:
        if attempt is None or claim is None:
            raise
        raise ClaimFailed(claim, *attempt) from exc
    finally:
        if heartbeat is not None:
            # With the next beat: a claim must be named at once (a takeover needs it), its end
            # need not, and a write per upload would cost a commit each.
            heartbeat.set("idle", at_once=False)
    report_outcome(claim, outcome)  # committed: only now does it count
    detect_after_commit(conn, [outcome])
    return claim.upload_id


def report_outcome(claim: Claim, outcome: Outcome) -> None:
    """Count a committed ingest and log its one line (upload, project, job, rows, seconds)."""
    seconds = time.monotonic() - claim.started
    fields = {
        "event": "ingest",
        "upload_id": claim.upload_id,
        "project": claim.project,
        "job": claim.job,
        "outcome": outcome.status,
        "rows": outcome.rows,
        "seconds": round(seconds, 6),
    }
    if outcome.status == "done":
        metrics.record_done(seconds=seconds, rows=outcome.rows)
        log.info(
            "upload %s done: %s rows of project %s job %s in %.3f s",
            claim.upload_id, outcome.rows, claim.project, claim.job, seconds, extra=fields,
        )  # fmt: skip
        return
    code = outcome.code if outcome.code in _FAILURE_CODES else "other"
    metrics.record_failed(seconds=seconds, code=code)
    log.info(
        "upload %s failed (%s): project %s job %s in %.3f s",
        claim.upload_id, code, claim.project, claim.job, seconds,
        extra={**fields, "error_code": code},
    )  # fmt: skip


def _fail_rejected(conn: psycopg.Connection[Any], failed: ClaimFailed, detail: str) -> None:
    """Fail an upload whose data the database refused, in a transaction of its own."""
    with conn.transaction():
        still_queued = conn.execute(
            "SELECT 1 FROM upload WHERE id = %s AND status = 'queued' FOR NO KEY UPDATE",
            (failed.upload_id,),
        ).fetchone()
        if not still_queued:
            return
        finish_failed(conn, failed.upload_id, failed.attempts, "store-rejected", detail)
    report_outcome(failed.claim, Outcome("failed", code="store-rejected"))


def drain(
    conn: psycopg.Connection[Any],
    side: psycopg.Connection[Any],
    config: WorkerConfig,
    *,
    heartbeat: Heartbeat | None = None,
    stop: threading.Event | None = None,
    deferred: set[int] | None = None,
    known_tests: KnownTests | None = None,
    parse_ahead: ParseAhead | None = None,
    compactor: BackgroundCompactor | None = None,
) -> int:
    """Process uploads until the queue is empty (or `stop`); returns how many were processed.
    `known_tests` is `conn`'s memo of written test cases (a new one when not given);
    `parse_ahead` parses the next batch's uploads while one is stored (batches only);
    `compactor` compacts beside the ingest (without it, on `conn`, between batches).

    Raises TransientFailure when the database fails for a reason of the moment: the claim
    rolled back and spent no attempt; its row is given back (or listed for later if the
    database cannot take the write) and the upload is added to `deferred`, so the next claims
    take other queued uploads first (one that keeps causing a shortage holds no queue).
    """
    known = KnownTests() if known_tests is None else known_tests
    processed = 0
    since_compaction = 0
    while stop is None or not stop.is_set():
        try:
            if since_compaction >= COMPACT_AFTER_UPLOADS:
                _compact(conn, compactor)
                since_compaction = 0
            if config.batch_uploads > 1:
                # Imported here: the batch builds on this module's steps.
                from ingest.batch import process_batch

                upload_ids = process_batch(
                    conn,
                    side,
                    config,
                    heartbeat=heartbeat,
                    known_tests=known,
                    deferred=deferred,
                    parse_ahead=parse_ahead,
                )
            else:
                upload_ids = process_one(
                    conn, side, config, heartbeat=heartbeat, known_tests=known, deferred=deferred
                )
        except ClaimFailed as failed:
            exc = failed.__cause__ or failed
            known.clear()  # the rollback undid what it remembers
            # Decided before anything is written: a transient fault records nothing.
            if is_transient(exc):
                if deferred is not None:
                    deferred.add(failed.upload_id)
                pending = [failed.attempt_id]
                forget_attempts(side, pending)
                raise TransientFailure(describe(exc), pending) from exc
            record_error(side, failed.attempt_id, describe(exc))
            if is_input_fault(exc):
                log.warning("upload %s refused by the database: %s", failed.upload_id, exc)
                _fail_rejected(conn, failed, describe(exc))
            else:
                # Not the report's fault as far as we know (a bug): the upload stays queued
                # and another attempt is spent on it.
                log.error("ingest of upload %s failed", failed.upload_id, exc_info=exc)
            processed += 1
            continue
        except psycopg.Error as exc:
            if is_transient(exc):
                raise TransientFailure(describe(exc), []) from exc
            raise
        if upload_ids is None:
            try:
                _compact(conn, compactor)
            except psycopg.Error as exc:
                if is_transient(exc):
                    raise TransientFailure(describe(exc), []) from exc
                raise
            return processed
        if deferred is not None:
            deferred.difference_update(upload_ids)
        processed += len(upload_ids)
        since_compaction += len(upload_ids)
    return processed


def _compact(conn: psycopg.Connection[Any], compactor: BackgroundCompactor | None) -> None:
    if compactor is None:
        compact_backlog(conn)
    else:
        compactor.request()


def _connect(
    dsn: str, name: str, *, autocommit: bool = False, **options: Any
) -> psycopg.Connection[Any]:
    # application_name shows the worker in pg_stat_activity; keepalives notice a dead server.
    return psycopg.connect(
        dsn,
        autocommit=autocommit,
        connect_timeout=10,
        application_name=application_name(name),
        keepalives=1,
        keepalives_idle=30,
        **options,
    )


def ingest_connection(dsn: str, name: str) -> psycopg.Connection[Any]:
    """The connection whose transactions claim, store and finish uploads.

    It commits without waiting for the WAL flush (synchronous_commit off): a database crash
    then loses a just-committed ingest whole (rows, rollups and the `done` mark together), and
    the upload, which the API committed synchronously, is still queued and is ingested again.
    Nobody is answered on this commit, and the flush was the largest share of a small upload's
    ingest on a busy disk (bench/profile_ingest.py).
    """
    return _connect(dsn, name, options="-c synchronous_commit=off")


def side_connection(dsn: str, name: str) -> psycopg.Connection[Any]:
    """An autocommit connection for the claims' attempt rows, outside the ingest transaction so
    that they outlive a worker killed mid-ingest. It does not wait for the WAL flush either: a
    synchronous commit here would wait for the previous ingest's WAL (bench/profile_ingest.py
    measured that wait move here), and a row a database crash loses is an attempt that the
    crash did not spend anyway: a worker that reconnects keeps its unerrored rows unspent
    (ingest/attempts.py)."""
    return _connect(dsn, name, autocommit=True, options="-c synchronous_commit=off")


# Uploads a worker ingests before it adds their runs to the per-test rollups when the queue
# does not empty first: the more runs of one suite a pass folds together, the fewer rollup
# rows it writes per run; readers add the runs not compacted yet, so only their cost waits.
COMPACT_AFTER_UPLOADS = 128


def run_worker(dsn: str, config: WorkerConfig, stop: threading.Event) -> None:
    """Ingest until `stop` is set: drain the queue, take over dead workers' claims, sleep until
    NOTIFY or the poll timeout. Connection losses and transient errors never end it: it backs
    off (jittered, capped), reconnects and goes on."""
    name = config.name or worker_name()
    heartbeat = Heartbeat(dsn, name, interval_s=config.heartbeat_s)
    heartbeat.start()
    backoff = Backoff(config.backoff_first_s, config.backoff_cap_s)
    given_back: list[int] = []  # attempts to give back once the database answers again
    deferred: set[int] = set()  # uploads that failed for a transient reason, claimed last
    try:
        while not stop.is_set():
            try:
                _serve_queue(dsn, name, config, stop, heartbeat, backoff, given_back, deferred)
            except TransientFailure as exc:
                given_back.extend(exc.attempt_ids)
                detail = str(exc)
            except ShutdownRequested:
                return
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                detail = describe(exc)
            except Exception as exc:
                # Outside any claim (e.g. the schema is not there yet): a worker that exits
                # ingests nothing, so it logs, waits and tries again like after an outage.
                log.exception("worker loop failed")
                detail = describe(exc)
            if stop.is_set():
                return
            delay = backoff.next_delay()
            log.warning("cannot ingest (%s); retrying in %.1f s", detail, delay)
            heartbeat.set("waiting", detail=f"{detail}; retrying in {delay:.1f} s")
            stop.wait(delay)
    finally:
        heartbeat.stop()


def _serve_queue(
    dsn: str,
    name: str,
    config: WorkerConfig,
    stop: threading.Event,
    heartbeat: Heartbeat,
    backoff: Backoff,
    given_back: list[int],
    deferred: set[int],
) -> None:
    with (
        ingest_connection(dsn, name) as conn,
        side_connection(dsn, name) as side,
        _connect(dsn, name, autocommit=True) as listener,
        _parse_ahead(dsn, name, config) as ahead,
        # Its session carries the worker's name: it is this worker to the other sessions.
        BackgroundCompactor(lambda: ingest_connection(dsn, name)) as compactor,
    ):
        heartbeat.attach(conn)
        listener.execute(f"LISTEN {CHANNEL}")
        forget_attempts(side, given_back)
        known = KnownTests()  # this connection's, so this database's, written test cases
        while not stop.is_set():
            drain(
                conn,
                side,
                config,
                heartbeat=heartbeat,
                stop=stop,
                deferred=deferred,
                known_tests=known,
                parse_ahead=ahead,
                compactor=compactor,
            )
            backoff.reset()
            retry_backlog(conn)
            if take_over_stale_claims(side, me=name, lease_s=config.lease_s):
                continue
            heartbeat.set("idle")
            waited = 0.0
            # Short slices keep shutdown prompt; a NOTIFY ends the wait at once.
            while waited < config.poll_s and not stop.is_set():
                if any(True for _ in listener.notifies(timeout=0.5, stop_after=1)):
                    break
                waited += 0.5


def _parse_ahead(
    dsn: str, name: str, config: WorkerConfig
) -> contextlib.AbstractContextManager[ParseAhead | None]:
    if not config.parse_ahead or config.batch_uploads < 2:
        return contextlib.nullcontext()
    return ParseAhead(dsn, name, uploads=config.batch_uploads, limits=config.limits)
