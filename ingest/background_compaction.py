"""A worker's compaction on a connection and thread of its own, beside its ingest.

Compacting on the ingest's connection put each pass (2.5 ms of the database's work per upload
of a known 1,000-test suite: bench/profile_ingest.py --known) in the worker's serial chain,
and a pass that waited (a lock, a slow disk) held up every queued upload behind it. Here the
loop only asks; a thread runs the passes while the next batches are stored, so the database
does both on its two cores. A pass that fails or is cut short leaves its runs not compacted:
readers add them (app/db/rollup_reads.py) and the next pass, of any compactor, takes them.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any

import psycopg

from ingest.failures import describe, is_transient
from ingest.rollup_compaction import compact_backlog

log = logging.getLogger("laptime.worker")

# How long a stopping worker lets a running pass finish before it cancels the statement.
STOP_GRACE_S = 2.0


class BackgroundCompactor:
    """Runs `compact_backlog` in a thread of its own whenever asked (`request`), one backlog
    at a time; asks that come while it runs make one more round. A context manager: leaving
    it stops the thread, cancelling a pass still running after STOP_GRACE_S."""

    def __init__(self, connect: Callable[[], psycopg.Connection[Any]]) -> None:
        self._connect = connect
        self._asked = threading.Event()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._thread: threading.Thread | None = None
        self.rounds = 0  # backlogs compacted (read by tests and the log)

    def request(self) -> None:
        """Compact the backlog soon; returns at once."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="laptime-compactor")
            self._thread.daemon = True
            self._thread.start()
        self._asked.set()

    def _run(self) -> None:
        while True:
            self._asked.wait()
            if self._stopping.is_set():
                return
            self._asked.clear()
            self._compact_once()

    def _compact_once(self) -> None:
        try:
            conn = self._connection()
            compact_backlog(conn)
            self.rounds += 1
        except psycopg.Error as exc:
            # Never lost: the runs stay not compacted, exact for readers, taken next time.
            self._drop_connection()
            if self._stopping.is_set():
                return
            if is_transient(exc):
                log.warning("compaction put off: %s", describe(exc))
            else:
                log.error("compaction failed", exc_info=exc)
        except Exception:
            self._drop_connection()
            log.exception("compaction failed")

    def _connection(self) -> psycopg.Connection[Any]:
        with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            return self._conn

    def _drop_connection(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def stop(self) -> None:
        """End the thread: a running pass gets STOP_GRACE_S, then its statement is cancelled
        (it rolls back; its runs are compacted later)."""
        self._stopping.set()
        self._asked.set()
        thread = self._thread
        if thread is None:
            return
        thread.join(STOP_GRACE_S)
        if thread.is_alive():
            with self._lock:
                conn = self._conn
            if conn is not None:
                try:
                    conn.cancel_safe(timeout=STOP_GRACE_S)
                except psycopg.Error as exc:
                    log.warning("could not cancel the compaction: %s", describe(exc))
            thread.join(STOP_GRACE_S)
        if not thread.is_alive():
            # A thread still in its statement keeps its connection; it dies with the process.
            self._drop_connection()

    def __enter__(self) -> BackgroundCompactor:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
