"""A worker SIGKILLed mid-ingest leaves the upload to the next worker: exact counts, done."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import psycopg
import pytest
from sqlalchemy import text

from app.db.engine import make_engine, migrate
from tests.conftest import Database, make_project
from tests.factories import junit_xml


@pytest.fixture
def private_db(database: Database) -> str:
    """A database of its own, so no other test's worker can take the upload."""
    name = f"crash_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = database.url.replace("/postgres?", f"/{name}?")
    migrate(url)
    return url


def _worker(url: str, *, hang: bool) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DATABASE_URL": url, "LAPTIME_WORKER_POLL_S": "0.2"}
    if hang:
        env["LAPTIME_FAULT_HANG_BEFORE_COMMIT"] = "1"
    else:
        env.pop("LAPTIME_FAULT_HANG_BEFORE_COMMIT", None)
    return subprocess.Popen(
        [sys.executable, "-c", "from app.cli.main import main; main()", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _wait_for(predicate, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.05)  # waiting on another process, not timing


def test_sigkill_mid_ingest_then_restart(private_db: str) -> None:
    from app.db.uploads import IncomingFile, insert_upload

    engine = make_engine(private_db)
    project = make_project(engine)
    with engine.begin() as conn:
        from app.db.projects import get_project

        found = get_project(conn, project.slug)
        assert found is not None
        receipt = insert_upload(
            conn,
            found,
            [IncomingFile("r.xml", junit_xml(2000, seed=7))],
            {"job": "crash"},
            idempotency_key=None,
            max_report_bytes=10**9,
        )

    def scalar(sql: str) -> int:
        with engine.connect() as conn:
            return int(conn.execute(text(sql), {"u": receipt.id}).scalar_one())

    hung = _worker(private_db, hang=True)
    try:
        # The hung worker has written every row of its transaction when it holds the lock and
        # its attempt is recorded; rows are invisible until a commit that never comes.
        _wait_for(lambda: scalar("SELECT count(*) FROM upload_attempt WHERE upload_id = :u") == 1)
        _wait_for(
            lambda: (
                scalar(
                    "SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' "
                    "AND query LIKE '%UPDATE upload SET status = ''done''%'"
                )
                >= 1
            )
        )
    finally:
        hung.send_signal(signal.SIGKILL)
        hung.wait(timeout=30)
    assert scalar("SELECT count(*) FROM test_result") == 0
    assert scalar("SELECT count(*) FROM upload WHERE id = :u AND status = 'queued'") == 1

    healthy = _worker(private_db, hang=False)
    try:
        _wait_for(
            lambda: scalar("SELECT count(*) FROM upload WHERE id = :u AND status = 'done'") == 1
        )
    finally:
        healthy.send_signal(signal.SIGTERM)
        healthy.wait(timeout=30)
    assert scalar("SELECT count(*) FROM test_result") == 2000
    assert scalar("SELECT count(*) FROM run") == 1
    assert scalar("SELECT count(*) FROM upload_attempt WHERE upload_id = :u") == 2
    engine.dispose()
