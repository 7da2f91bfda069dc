"""Parse-ahead: while a worker's batch waits on the database, a process of its own reads and
parses the uploads the worker's next claim is likely to take, and makes their results storable,
so that this CPU work leaves the worker's serial chain (claim, parse, store, commit).

A process, not a thread: a thread parsing beside the worker made it slower. The worker's
statements release and retake the GIL at every round trip, and each retake waited for the
parsing thread (the convoy effect); bench/bench_upload_rate.py `--phases` compares.

It claims nothing and writes nothing: the claim alone decides what is ingested, and a parsed
upload is used only when a claim returns it. An upload's files and metadata never change once
it is queued, so parsing it earlier gives what parsing it after the claim gives. Whatever fails
here (a report, the connection, the process, the database) only means those uploads are parsed
after their claim, as without parse-ahead: the worker's handling of a bad report stays the only
one. The process starts at the first full batch (a backlog), not with the worker.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
import psycopg

from ingest.attempts import APPLICATION_PREFIX, application_name
from ingest.merge import MergedRun
from ingest.parsers.limits import ParseLimits
from ingest.store import storable_results
from ingest.upload_ingest import merged_upload, read_upload_files

log = logging.getLogger("laptime.worker")

# The uploads a next claim would take (ingest.claims.CLAIM, ingest.batch.CLAIM_MATES): the
# first queued one nobody holds, then its project mates. An upload some worker holds has an
# attempt row from its claim on, so no lock is needed to pass it over. Uploads past `bytes`
# of stored files are left to their claim: parse-ahead never holds more than that at once.
# None while another worker is connected: every worker would parse the same next uploads and
# only one would claim them (with 3 workers that made the ingest slower).
_ANOTHER_WORKER = """EXISTS (
    SELECT 1 FROM pg_stat_activity s WHERE s.datname = current_database()
      AND left(s.application_name, length(%(prefix)s)) = %(prefix)s
      AND s.application_name <> %(me)s)"""
_NEXT_UPLOADS = f"""
WITH free AS (
    SELECT u.id, u.project_id, u.metadata->>'runner' AS runner,
        (SELECT coalesce(sum(octet_length(f.raw_gzip)), 0) FROM upload_file f
         WHERE f.upload_id = u.id) AS size
    FROM upload u
    WHERE NOT {_ANOTHER_WORKER}
      AND u.status = 'queued' AND NOT (u.id = ANY(%(exclude)s))
      AND NOT EXISTS (SELECT 1 FROM upload_attempt a WHERE a.upload_id = u.id)
    ORDER BY u.id LIMIT %(look)s
)
SELECT id, runner FROM (
    SELECT id, runner, sum(size) OVER (ORDER BY id) AS total FROM free
    WHERE project_id = (SELECT project_id FROM free ORDER BY id LIMIT 1)
    ORDER BY id LIMIT %(uploads)s
) AS next WHERE total <= %(bytes)s ORDER BY id
"""

MAX_BYTES = 64 * 1024 * 1024
# A wait for the process's work longer than this (a database that hangs) gives up on it.
WAIT_S = 30.0
APPLICATION = "laptime-parse-ahead"
# How often the process checks that its worker still runs.
PARENT_CHECK_S = 1.0


@dataclass(frozen=True)
class Parsed:
    """An upload parsed ahead of its claim: its merged run with storable results (and the
    warnings making them storable gave), and what it was parsed with."""

    runner: str | None
    files: int
    merged: MergedRun
    warnings: list[str]

    def storable(self) -> tuple[pd.DataFrame, list[str]]:
        """What ingest.store.storable_results gives for the run's results."""
        return self.merged.results, self.warnings


@dataclass(frozen=True)
class _Job:
    """What the process needs for one round (picklable)."""

    dsn: str
    worker: str  # its application_name
    exclude: list[int]
    uploads: int
    limits: ParseLimits | None
    max_bytes: int


class ParseAhead:
    """The parse-ahead process of the worker named `worker` (see the module's docstring)."""

    def __init__(
        self,
        dsn: str,
        worker: str,
        *,
        uploads: int,
        limits: ParseLimits | None,
        max_bytes: int = MAX_BYTES,
    ) -> None:
        self.dsn = dsn
        self._worker = application_name(worker)
        self._uploads = uploads
        self._limits = limits
        self._max_bytes = max_bytes
        self._pool: ProcessPoolExecutor | None = None
        self._pending: Future[tuple[int, dict[int, Parsed]]] | None = None
        self.process_id: int | None = None  # of the process that answered last
        self.parsed = 0  # uploads parsed ahead and handed over
        self.used = 0  # of those, uploads a claim returned

    def start(self, conn: psycopg.Connection[Any], exclude: list[int]) -> None:
        """Begin reading and parsing the uploads the next claim would take, `exclude` (this
        worker's current batch) apart; nothing when the last round is still at work. The
        process starts at the first call while no other worker is connected (asked on the
        worker's `conn`); from then on each round asks again itself."""
        if self._pending is not None and not self._pending.done():
            return
        if self._pool is None and self._another_worker(conn):
            return
        job = _Job(
            self.dsn, self._worker, list(exclude), self._uploads, self._limits, self._max_bytes
        )
        try:
            if self._pool is None:
                # spawn: a forked child would share the worker's database sockets.
                self._pool = ProcessPoolExecutor(
                    1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_end_with_parent,
                    initargs=(os.getpid(),),
                )
            self._pending = self._pool.submit(_read_and_parse, job)
        except (BrokenProcessPool, RuntimeError, OSError) as exc:
            log.warning("parse-ahead cannot start (%s); parsing after the claim", exc)
            self._drop_pool()

    def _another_worker(self, conn: psycopg.Connection[Any]) -> bool:
        row = conn.execute(
            f"SELECT {_ANOTHER_WORKER}", {"prefix": APPLICATION_PREFIX, "me": self._worker}
        ).fetchone()
        return bool(row and row[0])

    def take(self, upload_ids: list[int]) -> dict[int, Parsed]:
        """The uploads among `upload_ids` parsed ahead (waiting for the process's round); the
        others it parsed are forgotten (another worker claimed them, or they come later)."""
        pending, self._pending = self._pending, None
        if pending is None:
            return {}
        try:
            self.process_id, ready = pending.result(timeout=WAIT_S)
        except FutureTimeout:
            log.warning("parse-ahead did not answer in %.0f s; parsing after the claim", WAIT_S)
            self._drop_pool()
            return {}
        except BrokenProcessPool as exc:
            log.warning("parse-ahead process ended (%s); parsing after the claim", exc)
            self._drop_pool()
            return {}
        self.parsed += len(ready)
        found = {i: ready[i] for i in upload_ids if i in ready}
        self.used += len(found)
        return found

    def __enter__(self) -> ParseAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the process (its connection closes with it)."""
        self._pending = None
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def _drop_pool(self) -> None:
        pool, self._pool, self._pending = self._pool, None, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _end_with_parent(parent: int) -> None:
    """In the parse-ahead process: exit once the worker is gone. A worker killed outright
    (SIGKILL, the OOM killer) never shuts its pool down, and the process would live on."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


# The process's own connection, opened at its first round and again after a loss.
_connection: psycopg.Connection[Any] | None = None


def _read_and_parse(job: _Job) -> tuple[int, dict[int, Parsed]]:
    """In the parse-ahead process: its pid, and the next claim's uploads parsed and made
    storable."""
    return os.getpid(), _parsed_uploads(job)


def _parsed_uploads(job: _Job) -> dict[int, Parsed]:
    global _connection
    try:
        if _connection is None or _connection.closed:
            _connection = psycopg.connect(
                job.dsn, autocommit=True, application_name=APPLICATION, connect_timeout=10
            )
        conn = _connection
        uploads = conn.execute(
            _NEXT_UPLOADS,
            {
                "prefix": APPLICATION_PREFIX,
                "me": job.worker,
                "exclude": job.exclude,
                "look": job.uploads * 4,
                "uploads": job.uploads,
                "bytes": job.max_bytes,
            },
        ).fetchall()
        files = read_upload_files(conn, [int(i) for i, _ in uploads]) if uploads else {}
    except psycopg.Error as exc:
        # Lost, or the database is failing: the claims will say so; the next round reconnects.
        log.info("parse-ahead cannot read the queue (%s)", exc)
        lost, _connection = _connection, None
        if lost is not None:
            with contextlib.suppress(psycopg.Error):
                lost.close()
        return {}
    parsed: dict[int, Parsed] = {}
    for upload_id, runner in uploads:
        upload_files = files[int(upload_id)]
        try:
            merged = merged_upload(upload_files, job.limits, runner)
            if merged is not None:
                results, warnings = storable_results(merged.results)
                merged = replace(merged, results=results)
                parsed[int(upload_id)] = Parsed(runner, len(upload_files), merged, warnings)
        except Exception:
            continue
    return parsed
