"""A worker that dies or freezes mid-ingest leaves the upload to the next worker: the rollback
stores nothing, the next worker stores everything once, and the lost claim counts an attempt.

The fault is a trigger that blocks the worker's final UPDATE on an advisory lock the test
holds: every row of the ingest is written, nothing is committed."""

from __future__ import annotations

import signal

import psycopg
import pytest

from tests.factories import junit_xml
from tests.server.conftest import (
    queue_upload,
    scalar,
    sqlalchemy_to_dsn,
    start_worker,
    wait_for,
)
from tests.server.faults import BLOCK_BEFORE_DONE, BLOCK_KEY, DISARM_BLOCK, blocked_backends


@pytest.fixture
def blocking_db(private_db: str):
    """The private database with the blocking fault armed and its lock held by the test."""
    dsn = sqlalchemy_to_dsn(private_db)
    with psycopg.connect(dsn, autocommit=True) as holder:
        holder.execute(BLOCK_BEFORE_DONE)
        holder.execute("SELECT pg_advisory_lock(%s)", (BLOCK_KEY,))
        yield private_db, holder


def _disarm(url: str) -> None:
    with psycopg.connect(sqlalchemy_to_dsn(url), autocommit=True) as conn:
        conn.execute(DISARM_BLOCK)


def _done(url: str, upload: int) -> bool:
    sql = "SELECT count(*) FROM upload WHERE id = %s AND status = 'done'"
    return bool(scalar(url, sql, upload))


def test_sigkill_mid_ingest_then_restart(blocking_db) -> None:
    url, holder = blocking_db
    upload = queue_upload(url, junit_xml(2000, seed=7), job="crash")
    hung = start_worker(url)
    try:
        wait_for(lambda: blocked_backends(sqlalchemy_to_dsn(url)) == 1, what="worker blocked")
    finally:
        hung.send_signal(signal.SIGKILL)
        hung.wait(timeout=30)
    # Its backend goes on once the lock is free, finds its client gone and rolls back.
    holder.execute("SELECT pg_advisory_unlock(%s)", (BLOCK_KEY,))
    wait_for(
        lambda: scalar(url, "SELECT count(*) FROM pg_stat_activity WHERE pid <> "
                       "pg_backend_pid() AND datname = current_database() "
                       "AND application_name LIKE 'laptime-worker%%'") == 0,
        what="the killed worker's sessions ended",
    )  # fmt: skip
    assert scalar(url, "SELECT count(*) FROM test_result") == 0
    assert scalar(url, "SELECT count(*) FROM upload WHERE id = %s AND status = 'queued'", upload)
    _disarm(url)

    healthy = start_worker(url)
    try:
        wait_for(lambda: _done(url, upload), what="the next worker finished it")
    finally:
        healthy.send_signal(signal.SIGTERM)
        healthy.wait(timeout=30)
    assert scalar(url, "SELECT count(*) FROM test_result") == 2000
    assert scalar(url, "SELECT count(*) FROM run") == 1
    assert scalar(url, "SELECT count(*) FROM upload_attempt WHERE upload_id = %s", upload) == 2
    assert scalar(url, "SELECT attempts FROM upload WHERE id = %s", upload) == 2


def test_a_frozen_workers_claim_is_taken_over(blocking_db) -> None:
    """SIGSTOP: the process and its connection live on, holding the claim, but it stops beating;
    after the lease another worker ends its session and ingests the upload."""
    url, _holder = blocking_db
    upload = queue_upload(url, junit_xml(300, seed=3), job="frozen")
    fast_beat = ("LAPTIME_WORKER_HEARTBEAT_S", "0.2")
    frozen = start_worker(url, fast_beat)
    taker = None
    try:
        wait_for(lambda: blocked_backends(sqlalchemy_to_dsn(url)) == 1, what="worker blocked")
        frozen.send_signal(signal.SIGSTOP)
        _disarm(url)
        taker = start_worker(url, fast_beat, ("LAPTIME_WORKER_LEASE_S", "1.5"))
        wait_for(lambda: _done(url, upload), what="the claim taken over and the upload ingested")
    finally:
        frozen.send_signal(signal.SIGKILL)
        frozen.wait(timeout=30)
        if taker is not None:
            taker.send_signal(signal.SIGTERM)
            taker.wait(timeout=30)
    assert scalar(url, "SELECT count(*) FROM test_result") == 300
    assert scalar(url, "SELECT count(*) FROM run") == 1
    # The frozen claim counts (a report that hangs every worker must run out of attempts).
    assert scalar(url, "SELECT attempts FROM upload WHERE id = %s", upload) == 2
    assert (
        scalar(
            url,
            "SELECT count(*) FROM upload_attempt WHERE upload_id = %s AND error LIKE "
            "'worker %% stopped beating at %%taken over by %%'",
            upload,
        )
        == 1
    )
    assert (
        scalar(
            url,
            "SELECT count(*) FROM worker_heartbeat WHERE pid = %s AND state = 'lost'",
            frozen.pid,
        )
        == 1
    )
