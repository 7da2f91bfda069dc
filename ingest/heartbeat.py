"""Worker heartbeats and the takeover of claims whose worker stopped beating.

Each worker rewrites its row of `worker_heartbeat` every few seconds from a thread with its own
connection, so a long parse or COPY never delays a beat. The row names the upload being
ingested and the backend holding its claim. A worker that stops beating for the lease time
while holding a claim (its machine froze or dropped off the network, so its connection stays
open and keeps the row locked) is presumed dead: another worker terminates that backend, which
rolls its transaction back and frees the upload, and records why on the dead claim's attempt.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from typing import Any

import psycopg

from ingest.attempts import application_name
from ingest.metrics import HEARTBEATS

log = logging.getLogger("laptime.worker")

_UPSERT = """
INSERT INTO worker_heartbeat AS h (name, host, pid, state, upload_id, backend_pid,
    backend_start, detail)
VALUES (%(name)s, %(host)s, %(pid)s, %(state)s, %(upload)s, %(bpid)s, %(bstart)s, %(detail)s)
ON CONFLICT (name) DO UPDATE SET host = excluded.host, pid = excluded.pid,
    seen_at = clock_timestamp(), state = excluded.state, upload_id = excluded.upload_id,
    backend_pid = excluded.backend_pid, backend_start = excluded.backend_start,
    detail = excluded.detail
"""


class Heartbeat:
    """A thread that writes this worker's state every `interval_s` and at once on a change."""

    def __init__(self, dsn: str, name: str, *, interval_s: float = 5.0) -> None:
        self.dsn = dsn
        self.name = name
        self.interval_s = interval_s
        self._state: dict[str, Any] = {
            "name": name,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "state": "starting",
            "upload": None,
            "bpid": None,
            "bstart": None,
            "detail": None,
        }
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="laptime-heartbeat", daemon=True)

    def start(self) -> None:
        """Start beating."""
        self._thread.start()

    def set(
        self,
        state: str,
        *,
        upload_id: int | None = None,
        detail: str | None = None,
        at_once: bool = True,
    ) -> None:
        """Record what the worker does now; written at once, or with the next beat."""
        with self._lock:
            self._state.update(state=state, upload=upload_id, detail=detail)
        if at_once:
            self._wake.set()

    def attach(self, conn: psycopg.Connection[Any]) -> None:
        """Name the backend of the ingest connection, the one a takeover would terminate."""
        row = conn.execute(
            "SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        ).fetchone()
        conn.rollback()
        with self._lock:
            self._state.update(bpid=row[0] if row else None, bstart=row[1] if row else None)

    def stop(self) -> None:
        """Stop beating and remove this worker's row (best effort: the database may be gone)."""
        self._stopped.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        while not self._stopped.is_set():
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(
                        self.dsn,
                        autocommit=True,
                        connect_timeout=5,
                        # The worker's name: while it beats, its claims' rows are not spent.
                        application_name=application_name(self.name),
                    )
                    # A beat lost in a server crash is harmless: no need to wait for its fsync.
                    conn.execute("SET synchronous_commit = off")
                with self._lock:
                    values = dict(self._state)
                conn.execute(_UPSERT, values)
                HEARTBEATS.inc()
            except psycopg.Error as exc:
                # The worker loop backs off and reports the outage; a beat just tries again.
                log.debug("heartbeat not written: %s", exc)
                if conn is not None:
                    conn.close()
                conn = None
            self._wake.wait(self.interval_s)
            self._wake.clear()
        try:
            if conn is None or conn.closed:
                conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=2)
            conn.execute("DELETE FROM worker_heartbeat WHERE name = %s", (self.name,))
        except psycopg.Error:
            pass
        finally:
            if conn is not None:
                conn.close()


@dataclass(frozen=True)
class TakenOver:
    """A claim taken from a worker that stopped beating."""

    worker: str
    upload_id: int


def take_over_stale_claims(
    side: psycopg.Connection[Any], *, me: str, lease_s: float
) -> list[TakenOver]:
    """End the claims of workers silent for more than `lease_s`; their uploads are queued again.

    `side` must be in autocommit mode. The dead claim's attempt stays counted (a report that
    kills or hangs every worker must still run out of attempts) with the reason recorded.
    """
    stale = side.execute(
        """
        SELECT name, upload_id, backend_pid, backend_start, seen_at FROM worker_heartbeat
        WHERE upload_id IS NOT NULL AND name <> %s
          AND seen_at < clock_timestamp() - make_interval(secs => %s)
        """,
        (me, lease_s),
    ).fetchall()
    taken = []
    for name, upload_id, backend_pid, backend_start, seen_at in stale:
        # Mark it first, guarded by the beat we saw: a worker that beat again meanwhile is
        # alive, and of two workers taking over at once only one goes on.
        moved = side.execute(
            "UPDATE worker_heartbeat SET state = 'lost', upload_id = NULL, detail = %s "
            "WHERE name = %s AND seen_at = %s",
            (f"claim on upload {upload_id} taken over by {me}", name, seen_at),
        )
        if moved.rowcount == 0:
            continue
        # backend_start guards against a pid the server has since given to another backend;
        # the wait lets the rollback finish before we look for the upload again.
        side.execute(
            "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity "
            "WHERE pid = %s AND backend_start = %s",
            (backend_pid, backend_start),
        )
        side.execute(
            "UPDATE upload_attempt SET error = %s WHERE id = (SELECT max(id) FROM upload_attempt "
            "WHERE upload_id = %s AND worker = %s) AND error IS NULL",
            (
                f"worker {name} stopped beating at {seen_at.isoformat()}; "
                f"its claim was taken over by {me}",
                upload_id,
                name,
            ),
        )
        log.warning("took over upload %s from silent worker %s", upload_id, name)
        taken.append(TakenOver(worker=name, upload_id=int(upload_id)))
    # Rows of workers long gone (killed without removing theirs) only clutter the table.
    side.execute(
        "DELETE FROM worker_heartbeat WHERE upload_id IS NULL "
        "AND seen_at < clock_timestamp() - interval '1 day'"
    )
    return taken
