"""SIGTERM stops `laptime worker` and `laptime serve` within 10 s whether idle or mid-ingest;
an interrupted ingest rolls back, spends no attempt, and leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess

import psycopg
import pytest

from tests.factories import junit_xml
from tests.server.conftest import (
    queue_upload,
    scalar,
    sqlalchemy_to_dsn,
    start_serve,
    start_worker,
    wait_for,
)
from tests.server.faults import BLOCK_BEFORE_DONE, BLOCK_KEY, blocked_backends

STOP_WITHIN_S = 10


def _heartbeat_pids(url: str) -> list[int]:
    with psycopg.connect(sqlalchemy_to_dsn(url)) as conn:
        return [int(r[0]) for r in conn.execute("SELECT pid FROM worker_heartbeat")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie child of ours still answers kill(0); it has exited all the same.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _block_next_ingest(url: str) -> psycopg.Connection:
    holder = psycopg.connect(sqlalchemy_to_dsn(url), autocommit=True)
    holder.execute(BLOCK_BEFORE_DONE)
    holder.execute("SELECT pg_advisory_lock(%s)", (BLOCK_KEY,))
    return holder


def _stop(proc: subprocess.Popen[bytes]) -> int:
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=STOP_WITHIN_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
        raise AssertionError(f"still running {STOP_WITHIN_S} s after SIGTERM") from None


@pytest.mark.parametrize("mid_ingest", [False, True], ids=["idle", "mid-ingest"])
def test_sigterm_stops_the_worker(private_db: str, mid_ingest: bool) -> None:
    holder = _block_next_ingest(private_db) if mid_ingest else None
    upload = queue_upload(private_db, junit_xml(500), job="term") if mid_ingest else None
    worker = start_worker(private_db)
    try:
        wait_for(lambda: _heartbeat_pids(private_db) == [worker.pid], what="worker beating")
        if mid_ingest:
            wait_for(lambda: blocked_backends(sqlalchemy_to_dsn(private_db)) == 1, what="block")
    finally:
        code = _stop(worker)
    assert code == 0, worker.stderr.read().decode()[-2000:]  # type: ignore[union-attr]
    assert _heartbeat_pids(private_db) == []  # it removed its own row
    if holder is not None:
        holder.close()
        # Rolled back (nothing stored) and the attempt given back: shutdown is not a failure.
        assert scalar(private_db, "SELECT count(*) FROM run") == 0
        assert scalar(private_db, "SELECT count(*) FROM upload_attempt WHERE upload_id = %s",
                      upload) == 0  # fmt: skip
        assert scalar(private_db, "SELECT count(*) FROM upload WHERE status = 'queued'") == 1


def _serve(url: str) -> subprocess.Popen[bytes]:
    return start_serve(url)[0]


@pytest.mark.parametrize("mid_ingest", [False, True], ids=["idle", "mid-ingest"])
def test_sigterm_stops_serve_and_its_worker(private_db: str, mid_ingest: bool) -> None:
    holder = _block_next_ingest(private_db) if mid_ingest else None
    serve = _serve(private_db)
    try:
        (child,) = _heartbeat_pids(private_db)
        assert child != serve.pid  # the worker runs in a process of its own
        if mid_ingest:
            queue_upload(private_db, junit_xml(500), job="term")
            wait_for(lambda: blocked_backends(sqlalchemy_to_dsn(private_db)) == 1, what="block")
    finally:
        _stop(serve)
    assert not _alive(child)
    if holder is not None:
        holder.close()
        assert scalar(private_db, "SELECT count(*) FROM run") == 0


def test_serve_restarts_a_worker_that_died(private_db: str) -> None:
    serve = _serve(private_db)
    try:
        (first,) = _heartbeat_pids(private_db)
        os.kill(first, signal.SIGKILL)
        # Its row stays (it could not remove it); a new worker process adds its own.
        wait_for(lambda: len(_heartbeat_pids(private_db)) == 2, 60, "a new worker beating")
        upload = queue_upload(private_db, junit_xml(50), job="after-restart")
        wait_for(
            lambda: scalar(private_db, "SELECT count(*) FROM upload WHERE id = %s AND "
                           "status = 'done'", upload),
            what="the new worker ingests",
        )  # fmt: skip
    finally:
        _stop(serve)
    assert not any(_alive(pid) for pid in _heartbeat_pids(private_db))
