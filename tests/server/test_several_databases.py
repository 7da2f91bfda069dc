"""One process serving several databases keeps each one's data apart.

Project, run and test ids repeat across databases. The worker's memo of written test cases was
one per process, keyed by project id: a process ingesting into two databases (the test suite's
live server beside a private database) skipped writing the test cases of a project whose id and
nodeids it had seen in the other, so that project's results joined no test case and every
per-test rollup came out empty. The read cache was keyed the same way.
"""

from __future__ import annotations

import threading

import psycopg
from sqlalchemy import Engine

from app.db.engine import make_engine
from app.services.project_reads import FrameCache, project_rollup, window_filters
from ingest.worker import WorkerConfig, drain, run_worker
from tests.conftest import Database
from tests.factories import junit_xml
from tests.server.conftest import (
    make_private_db,
    queue_upload,
    scalar,
    sqlalchemy_to_dsn,
    wait_for,
)

ORPHANS = (
    "SELECT count(*) FROM test_result r LEFT JOIN test_case c ON c.id = r.test_id "
    "WHERE c.id IS NULL"
)


def _by_test(url: str, project_id: int, *, shared: bool = False) -> int:
    """Rows of the project's by=test rollup, read afresh or through the shared read cache."""
    engine: Engine = make_engine(url)
    try:
        with engine.connect() as conn:
            cache = None if shared else FrameCache()
            rows = project_rollup(conn, project_id, window_filters(3650), by="test", cache=cache)
    finally:
        engine.dispose()
    return len(rows.rows)


def test_one_process_ingesting_two_databases_writes_the_test_cases_of_each(
    database: Database,
) -> None:
    urls = [make_private_db(database), make_private_db(database)]
    report = junit_xml(7, seed=11)
    stop = threading.Event()
    workers = []
    for index, url in enumerate(urls):
        # Same project id (1) and the same nodeids in both databases.
        queue_upload(url, report)
        config = WorkerConfig(poll_s=0.2, name=f"scope-{index}")
        worker = threading.Thread(target=run_worker, args=(sqlalchemy_to_dsn(url), config, stop))
        worker.start()
        workers.append(worker)
        # One after the other, so the second finds the first one's memo filled.
        wait_for(
            lambda url=url: scalar(url, "SELECT count(*) FROM upload WHERE status = 'done'") == 1,
            60,
            "the upload ingested",
        )
    stop.set()
    for worker in workers:
        worker.join(timeout=30)
    for url in urls:
        assert scalar(url, "SELECT count(*) FROM test_result") == 7
        assert scalar(url, ORPHANS) == 0
        assert _by_test(url, 1) == 7


def test_the_shared_read_cache_keeps_each_databases_frames(database: Database) -> None:
    urls = [make_private_db(database), make_private_db(database)]
    for tests, url in zip((3, 5), urls, strict=True):
        # Project 1, run 1 in each: equal data versions, different tests.
        queue_upload(url, junit_xml(tests, seed=tests))
        dsn = sqlalchemy_to_dsn(url)
        with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
            assert drain(conn, side, WorkerConfig()) == 1
    assert [_by_test(url, 1, shared=True) for url in urls] == [3, 5]
