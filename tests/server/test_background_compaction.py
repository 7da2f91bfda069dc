"""A worker adds its runs to the per-test rollups on a connection of its own, beside its
ingest (ingest/background_compaction.py): a compaction that waits (a lock, a slow pass) holds
up no upload; once it can go on it compacts every run, and the rollups equal a recomputation;
a worker stopped while its compaction waits exits promptly and the next worker compacts."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator

import psycopg
import pytest

from ingest.worker import COMPACT_AFTER_UPLOADS
from tests.conftest import Database
from tests.server.conftest import make_private_db, sqlalchemy_to_dsn, start_worker, wait_for
from tests.server.test_ingest_batch import (
    assert_rollups_equal_recomputation,
    new_project,
    queue,
    rows,
)
from tests.server.test_parse_ahead import queued, uploads

# Past one compaction's worth, so the worker compacts mid-backlog, not only once it is idle.
BACKLOG = COMPACT_AFTER_UPLOADS + 24


def count(url: str, sql: str) -> int:
    return int(rows(url, sql)[0][0])


def done(url: str) -> int:
    return count(url, "SELECT count(*) FROM upload WHERE status = 'done'")


def waiting_compactions(url: str) -> int:
    """Worker sessions waiting for a lock on a per-test rollup (a compaction pass)."""
    return count(
        url,
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid) "
        "WHERE NOT l.granted AND l.relation = 'rollup_test_weekly'::regclass "
        "AND a.application_name LIKE 'laptime-worker%%'",
    )


@pytest.fixture
def held_rollups(database: Database) -> Iterator[tuple[str, psycopg.Connection]]:
    """A private database with a backlog queued, and a session holding a lock that makes every
    compaction pass wait (inserts into rollup_test_weekly) until the test commits it."""
    url, _ = queued(database, "held", BACKLOG)
    with psycopg.connect(sqlalchemy_to_dsn(url)) as holder:
        holder.execute("LOCK TABLE rollup_test_weekly IN SHARE MODE")
        yield url, holder


def stop(worker: subprocess.Popen[bytes]) -> float:
    """SIGTERM the worker; seconds until it exited."""
    begun = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    worker.wait(timeout=60)
    return time.monotonic() - begun


def ingested_with_compaction_waiting(url: str) -> subprocess.Popen[bytes]:
    """A real worker, once it ingested the whole backlog while its compaction waits."""
    worker = start_worker(url)
    try:
        wait_for(lambda: done(url) == BACKLOG, 60, "every upload ingested")
        wait_for(lambda: waiting_compactions(url) == 1, 30, "the compaction waiting")
    except BaseException:
        stop(worker)
        raise
    return worker


def all_compacted(url: str, what: str) -> None:
    wait_for(lambda: count(url, "SELECT count(*) FROM run WHERE NOT compacted") == 0, 60, what)


def test_a_waiting_compaction_holds_up_no_upload_and_then_compacts_every_run(
    held_rollups: tuple[str, psycopg.Connection],
) -> None:
    url, holder = held_rollups
    worker = ingested_with_compaction_waiting(url)
    try:
        assert count(url, "SELECT count(*) FROM run WHERE compacted") == 0
        holder.commit()
        all_compacted(url, "every run compacted")
        assert count(url, "SELECT count(*) FROM run") == BACKLOG
        assert_rollups_equal_recomputation(url)
    finally:
        stop(worker)


def test_a_worker_stopped_while_its_compaction_waits_exits_and_the_next_one_compacts(
    held_rollups: tuple[str, psycopg.Connection],
) -> None:
    url, holder = held_rollups
    worker = ingested_with_compaction_waiting(url)
    seconds = stop(worker)
    assert worker.returncode == 0
    assert seconds < 15
    assert count(url, "SELECT count(*) FROM run WHERE compacted") == 0
    holder.commit()
    again = start_worker(url)
    try:
        # A new upload wakes it; it compacts the whole backlog once its queue is empty.
        new_project(url, "woken")
        queue(url, "woken", uploads(1))
        all_compacted(url, "the next worker compacted the backlog")
    finally:
        stop(again)
    assert_rollups_equal_recomputation(url)


def test_the_compaction_session_is_the_worker_s_own(database: Database) -> None:
    """Its session carries the worker's name: parse-ahead (which stays off while another
    worker is connected) and the stale-claim check count it as the same worker."""
    url = make_private_db(database)
    new_project(url, "named")
    worker = start_worker(url)
    try:
        queue(url, "named", uploads(3))
        wait_for(lambda: done(url) == 3, 60, "ingested")
        all_compacted(url, "compacted")
        names = {
            name
            for (name,) in rows(
                url,
                "SELECT DISTINCT application_name FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name LIKE 'laptime-worker%%'",
            )
        }
        assert len(names) == 1
        # Its ingest, side, listener, heartbeat and compaction sessions, all under one name.
        assert count(url, "SELECT count(*) FROM pg_stat_activity WHERE application_name = "
                     f"'{names.pop()}'") == 5  # fmt: skip
    finally:
        stop(worker)
