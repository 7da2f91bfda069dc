"""Queued uploads of one project ingested in one transaction (ingest/batch.py): the same rows
and rollups as ingesting them one by one, which also equal a recomputation from the raw
results; a report that fails to parse fails alone; a worker killed mid-batch leaves every
upload of the batch queued, and a restart ingests each exactly once."""

from __future__ import annotations

import json
import signal
from typing import Any

import psycopg
import pytest

from ingest.store import KnownTests
from ingest.worker import WorkerConfig, drain, ingest_connection, side_connection
from tests.conftest import Database
from tests.server.conftest import make_private_db, sqlalchemy_to_dsn, start_worker, wait_for
from tests.server.faults import BLOCK_BEFORE_DONE, BLOCK_KEY, DISARM_BLOCK, blocked_backends

# Binary fractions of a second: sums are exact in any order, so "equal" means equal.
TICK = 1 / 64


def laptime_report(
    tests: range, *, speed: int, marked: tuple[int, ...] = (), unknown: tuple[int, ...] = ()
) -> bytes:
    """A plugin report of tests `tests` over two files: parametrized ones with values, a
    failure with its message, a flaky test, unknown and phase-only durations, peak memory."""
    rows: list[dict[str, Any]] = []
    for i in tests:
        seconds = TICK * speed * (i % 7 + 1)
        row: dict[str, Any] = {
            "nodeid": f"tests/test_f{i % 2}.py::test_t[{i}]",
            "file": f"tests/test_f{i % 2}.py",
            "function": "test_t",
            "params": str(i),
            "param_values": {"i": str(i)},
            "markers": ["slow", "batch"] if i in marked else ["slow"],
            "outcome": "failed" if i % 5 == 4 else "passed",
            "duration_s": None if i in unknown else seconds,
            "setup_s": TICK if i % 3 == 0 else None,
            "call_s": seconds - TICK if i % 3 == 0 else None,
            "teardown_s": None,
            "peak_rss_mib": float(64 + i % 4 * 16),
            "worker": f"gw{i % 2}",
        }
        if i % 5 == 4:
            row["message"] = f'assert {i} == 0, "quoted"\tand a tab'
        if i % 11 == 3:
            row.update(attempts=2, flaky=True)
        rows.append(row)
    doc = {"format": "laptime-json", "version": 1, "session": {}, "tests": rows}
    return json.dumps(doc).encode()


def junit_report(tests: range, *, speed: int) -> bytes:
    """Another format in the same batch: JUnit with a skipped test."""
    cases = "".join(
        f'<testcase classname="tests.test_j" name="test_j{i}" time="{TICK * speed * i}">'
        + ("<skipped/>" if i == 2 else "")
        + "</testcase>"
        for i in tests
    )
    return (
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        f"{cases}</testsuite></testsuites>"
    ).encode()


# (job, started_at, report): a day and cell the history already has, two jobs on one day,
# a job twice on one day, another day of the same week, the next week, another format.
HISTORY = ("a", "2020-03-02T09:00:00+00:00", laptime_report(range(0, 12), speed=1))
BATCH = (
    ("a", "2020-03-02T10:00:00+00:00", laptime_report(range(0, 20), speed=2, unknown=(6,))),
    ("b", "2020-03-02T10:00:00+00:00", laptime_report(range(0, 20), speed=3)),
    ("a", "2020-03-02T11:00:00+00:00", laptime_report(range(5, 25), speed=1, marked=(3, 7))),
    ("a", "2020-03-04T10:00:00+00:00", laptime_report(range(10, 30), speed=4, marked=(12,))),
    ("c", "2020-03-09T10:00:00+00:00", junit_report(range(0, 6), speed=5)),
    ("b", "2020-03-09T10:00:00+00:00", laptime_report(range(0, 8), speed=5, unknown=(0, 1))),
)
# No test in two uploads of the batch (the rollups need no summing first), some in the history.
DISTINCT = (
    ("a", "2020-03-02T10:00:00+00:00", laptime_report(range(6, 14), speed=2, unknown=(13,))),
    ("b", "2020-03-02T10:00:00+00:00", laptime_report(range(20, 28), speed=3)),
    ("a", "2020-03-04T10:00:00+00:00", laptime_report(range(28, 36), speed=1, marked=(30,))),
    ("c", "2020-03-09T10:00:00+00:00", junit_report(range(0, 6), speed=5)),
)


def queue(url: str, project_slug: str, uploads: tuple[tuple[str, str, bytes], ...]) -> list[int]:
    """Queue uploads of one project (raw files committed, as the API does); their ids."""
    from app.db.engine import make_engine
    from app.db.projects import get_project
    from app.db.uploads import IncomingFile, UploadMetadata, insert_upload

    engine = make_engine(url, pool_size=1)
    ids = []
    try:
        for job, started_at, body in uploads:
            with engine.begin() as conn:
                project = get_project(conn, project_slug)
                assert project is not None
                name = "r.xml" if body.startswith(b"<") else "r.json"
                receipt = insert_upload(
                    conn,
                    project,
                    [IncomingFile(name, body)],
                    UploadMetadata.of(
                        {"job": job, "started_at": started_at, "pipeline": f"p{len(ids)}"}
                    ),
                    idempotency_key=None,
                    max_report_bytes=10**9,
                )
            ids.append(receipt.id)
    finally:
        engine.dispose()
    return ids


def new_project(url: str, slug: str) -> int:
    from app.db.engine import make_engine
    from app.db.projects import create_project

    engine = make_engine(url, pool_size=1)
    try:
        with engine.begin() as conn:
            return create_project(conn, slug).id
    finally:
        engine.dispose()


def ingest_all(url: str, batch_uploads: int) -> int:
    """Drain the queue with the worker's own loop; how many uploads it processed."""
    dsn = sqlalchemy_to_dsn(url)
    config = WorkerConfig(name="batch-test", batch_uploads=batch_uploads)
    with ingest_connection(dsn, "batch-test") as conn, side_connection(dsn, "batch-test") as side:
        return drain(conn, side, config, known_tests=KnownTests())


def rows(url: str, sql: str, *params: object) -> list[tuple[Any, ...]]:
    with psycopg.connect(sqlalchemy_to_dsn(url)) as conn:
        return [tuple(r) for r in conn.execute(sql, params).fetchall()]  # type: ignore[arg-type]


# Everything an ingest writes, keyed by what does not depend on the order of writing (cell
# ids do: a cell insert that finds its row spends a sequence number).
CELL = (
    "jsonb_build_object('cell', (SELECT concat_ws('/', c.job, c.machine, c.branch, "
    "c.labels_key) FROM cell c WHERE c.id = {}.cell_id))"
)
STORED = {
    "upload": "SELECT id, status, counts, warnings, attempts, error_code, error_detail, "
    "(SELECT to_jsonb(r) - 'id' - 'cell_id' || " + CELL.format("r") + " FROM run r "
    "WHERE r.id = u.run_id) FROM upload u ORDER BY id",
    "cell": "SELECT to_jsonb(c) - 'id' FROM cell c ORDER BY job, machine, branch, labels_key",
    "test_case": "SELECT to_jsonb(t) FROM test_case t ORDER BY id",
    "test_result": "SELECT (SELECT upload_id FROM run WHERE run.id = t.run_id), "
    "to_jsonb(t) - 'run_id' FROM test_result t ORDER BY 1, test_id",
    **{
        table: f"SELECT to_jsonb(r) - 'cell_id' || {CELL.format('r')} FROM {table} r ORDER BY 1"
        for table in (
            "rollup_daily",
            "rollup_cell_weekly",
            "rollup_file_daily",
            "rollup_file_weekly",
        )
    },
    "rollup_test_weekly": "SELECT to_jsonb(r) FROM rollup_test_weekly r ORDER BY 1",
}

FACTS = """count(*), count(r.duration_s), coalesce(sum(r.duration_s), 0), max(r.duration_s),
    sum(r.setup_s), sum(r.call_s), sum(r.teardown_s),
    count(*) FILTER (WHERE r.outcome IN ('failed', 'error')), count(*) FILTER (WHERE r.flaky),
    max(r.peak_rss_mib)"""
VALUES = "runs, known, total_s, max_s, setup_s, call_s, teardown_s, failures, flaky, peak_rss_mib"
FROM_RAW = "FROM test_result r JOIN run ON run.id = r.run_id"
WEEK = "date_trunc('week', r.day)::date"
# Each rollup table against the same sums recomputed from the raw results.
RECOMPUTED = {
    "rollup_daily": (
        f"SELECT day, cell_id, test_id, {VALUES} FROM rollup_daily ORDER BY 1, 2, 3",
        f"SELECT r.day, run.cell_id, r.test_id, {FACTS} {FROM_RAW} GROUP BY 1, 2, 3 "
        "ORDER BY 1, 2, 3",
    ),
    "rollup_cell_weekly": (
        f"SELECT week, cell_id, test_id, {VALUES} FROM rollup_cell_weekly ORDER BY 1, 2, 3",
        f"SELECT {WEEK}, run.cell_id, r.test_id, {FACTS} {FROM_RAW} GROUP BY 1, 2, 3 "
        "ORDER BY 1, 2, 3",
    ),
    "rollup_test_weekly": (
        f"SELECT week, test_id, {VALUES} FROM rollup_test_weekly ORDER BY 1, 2",
        f"SELECT {WEEK}, r.test_id, {FACTS} {FROM_RAW} GROUP BY 1, 2 ORDER BY 1, 2",
    ),
}
# Per file: its sums, and `tests` the most one run had.
FILE_OF = "coalesce((SELECT file FROM test_case c WHERE c.id = r.test_id), '(unknown)')"
PER_FILE = {
    "rollup_file_daily": ("day", "r.day"),
    "rollup_file_weekly": ("week", WEEK),
}


def recomputed_per_file(table: str) -> tuple[str, str]:
    column, bucket = PER_FILE[table]
    return (
        f"SELECT {column}, cell_id, file, tests, {VALUES} FROM {table} ORDER BY 1, 2, 3",
        f"""SELECT bucket, cell_id, file, max(per_run.tests), sum(runs), sum(known),
            sum(total_s), max(max_s), sum(setup_s), sum(call_s), sum(teardown_s),
            sum(failures), sum(flaky), max(peak_rss_mib)
        FROM (SELECT {bucket} AS bucket, run.cell_id, {FILE_OF} AS file, run.id,
                count(*) AS tests, {FACTS.replace("count(*),", "count(*) AS runs,", 1)}
              {FROM_RAW} GROUP BY 1, 2, 3, 4) AS per_run (bucket, cell_id, file, run, tests,
                runs, known, total_s, max_s, setup_s, call_s, teardown_s, failures, flaky,
                peak_rss_mib)
        GROUP BY 1, 2, 3 ORDER BY 1, 2, 3""",
    )


def assert_rollups_equal_recomputation(url: str) -> None:
    checks = {**RECOMPUTED, **{t: recomputed_per_file(t) for t in PER_FILE}}
    for table, (stored, recomputed) in checks.items():
        kept = rows(url, stored)
        assert kept, table
        assert kept == rows(url, recomputed), table


def one_transaction_each(url: str, upload_ids: list[int]) -> int:
    """How many transactions wrote the uploads' final rows."""
    return rows(url, "SELECT count(DISTINCT xmin::text) FROM upload WHERE id = ANY(%s)",
                upload_ids)[0][0]  # fmt: skip


@pytest.mark.parametrize(
    ("batch", "most_runs"),
    [(BATCH, (3, 5)), (DISTINCT, (2, 2))],
    ids=["tests-shared-in-the-batch", "distinct-tests"],
)
def test_a_batch_stores_what_separate_ingests_store(
    database: Database, batch: tuple[tuple[str, str, bytes], ...], most_runs: tuple[int, int]
) -> None:
    separate, batched = make_private_db(database), make_private_db(database)
    for url in (separate, batched):
        assert new_project(url, "batch") == 1  # the same test ids in both databases
        queue(url, "batch", (HISTORY,))
        assert ingest_all(url, batch_uploads=1) == 1  # a history the batch adds to
    ids = {url: queue(url, "batch", batch) for url in (separate, batched)}
    assert ids[separate] == ids[batched]

    assert ingest_all(separate, batch_uploads=1) == len(batch)
    assert ingest_all(batched, batch_uploads=8) == len(batch)

    assert one_transaction_each(separate, ids[separate]) == len(batch)
    assert one_transaction_each(batched, ids[batched]) == 1
    done = rows(batched, "SELECT count(*) FROM upload WHERE status = 'done'")[0][0]
    assert done == len(batch) + 1
    for what, sql in STORED.items():
        expected = rows(separate, sql)
        assert len(expected) >= 3, what
        assert rows(batched, sql) == expected, what
    for url in (separate, batched):
        assert_rollups_equal_recomputation(url)
    # The batch added to rows the history had (a cell-day, a week) and to its own.
    daily_runs = rows(batched, "SELECT max(runs) FROM rollup_daily")[0][0]
    weekly_runs = rows(batched, "SELECT max(runs) FROM rollup_test_weekly")[0][0]
    assert (daily_runs, weekly_runs) == most_runs


def test_a_report_that_fails_to_parse_fails_alone_and_the_batch_lands(
    database: Database,
) -> None:
    url = make_private_db(database)
    new_project(url, "bad")
    bad = b'{"format": "laptime-json", "version": 1, "tests": [{"nodeid": 5}]}'
    uploads = (
        ("a", "2020-03-02T10:00:00+00:00", laptime_report(range(0, 10), speed=1)),
        ("b", "2020-03-02T10:00:00+00:00", bad),
        ("c", "2020-03-02T10:00:00+00:00", laptime_report(range(0, 10), speed=2)),
        ("d", "2020-03-02T10:00:00+00:00", junit_report(range(0, 4), speed=1)),
    )
    ids = queue(url, "bad", uploads)
    assert ingest_all(url, batch_uploads=8) == len(uploads)

    assert one_transaction_each(url, ids) == 1
    status = rows(url, "SELECT id, status, error_code, error_detail, attempts FROM upload "
                  "ORDER BY id")  # fmt: skip
    assert [s[1] for s in status] == ["done", "failed", "done", "done"]
    _, _, code, detail, attempts = status[1]
    assert code is not None
    assert code != "store-rejected"
    assert "tests[0]" in detail
    assert "nodeid" in detail
    assert attempts == 1
    assert rows(url, "SELECT count(*) FROM test_result")[0][0] == 24
    assert rows(url, "SELECT upload_id FROM run ORDER BY upload_id") == [
        (ids[0],), (ids[2],), (ids[3],)
    ]  # fmt: skip
    assert_rollups_equal_recomputation(url)


@pytest.fixture
def blocking_db(database: Database):
    """A private database whose uploads cannot be marked done while the test holds a lock."""
    url = make_private_db(database)
    with psycopg.connect(sqlalchemy_to_dsn(url), autocommit=True) as holder:
        holder.execute(BLOCK_BEFORE_DONE)
        holder.execute("SELECT pg_advisory_lock(%s)", (BLOCK_KEY,))
        yield url, holder


def test_a_worker_killed_mid_batch_leaves_it_queued_and_a_restart_ingests_each_once(
    blocking_db,
) -> None:
    url, holder = blocking_db
    new_project(url, "killed")
    ids = queue(url, "killed", BATCH[:4])
    batch_size = ("LAPTIME_WORKER_BATCH_UPLOADS", "8")
    hung = start_worker(url, batch_size)
    try:
        wait_for(lambda: blocked_backends(sqlalchemy_to_dsn(url)) == 1, what="worker blocked")
        # Every row of the batch is written, nothing committed: all four are in one claim.
        claimed = rows(url, "SELECT count(DISTINCT upload_id), count(DISTINCT worker) "
                       "FROM upload_attempt")  # fmt: skip
        assert claimed == [(4, 1)]
    finally:
        hung.send_signal(signal.SIGKILL)
        hung.wait(timeout=30)
    holder.execute("SELECT pg_advisory_unlock(%s)", (BLOCK_KEY,))
    wait_for(
        lambda: rows(url, "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                     "AND datname = current_database() "
                     "AND application_name LIKE 'laptime-worker%%'")[0][0] == 0,
        what="the killed worker's sessions ended",
    )  # fmt: skip
    for table in ("test_result", "run", "rollup_daily", "rollup_test_weekly"):
        assert rows(url, f"SELECT count(*) FROM {table}") == [(0,)], table
    assert rows(url, "SELECT count(*) FROM upload WHERE status = 'queued'") == [(4,)]
    holder.execute(DISARM_BLOCK)

    healthy = start_worker(url, batch_size)
    try:
        wait_for(
            lambda: rows(url, "SELECT count(*) FROM upload WHERE status = 'done'") == [(4,)],
            what="the restarted worker ingested them",
        )
    finally:
        healthy.send_signal(signal.SIGTERM)
        healthy.wait(timeout=30)
    assert rows(url, "SELECT upload_id, count(*) FROM run GROUP BY 1 ORDER BY 1") == [
        (i, 1) for i in ids
    ]
    assert rows(url, "SELECT count(*) FROM test_result") == [(20 + 20 + 20 + 20,)]
    assert rows(url, "SELECT sum(runs) FROM rollup_test_weekly") == [(80,)]
    # The killed claim spent an attempt of each; the restart spent one more.
    assert rows(url, "SELECT attempts FROM upload ORDER BY id") == [(2,)] * 4
    assert_rollups_equal_recomputation(url)


def fail_run_inserts_of_job(url: str, job: str, sqlstate: str) -> None:
    """Make every insert of a run of `job` fail with `sqlstate`, mid-ingest (a trigger)."""
    with psycopg.connect(sqlalchemy_to_dsn(url), autocommit=True) as conn:
        conn.execute(
            f"""
            CREATE FUNCTION fault_job() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.job = '{job}' THEN
                    RAISE EXCEPTION 'injected fault' USING ERRCODE = '{sqlstate}';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER fault_job BEFORE INSERT ON run
                FOR EACH ROW EXECUTE FUNCTION fault_job();
            """
        )


@pytest.mark.parametrize(
    ("sqlstate", "code", "attempts"),
    # Data the database refuses fails at its first ingest alone; a fault like a bug of ours
    # spends every attempt the upload has.
    [("22023", "store-rejected", 2), ("P0001", "ingest-gave-up", 3)],
    ids=["refused-data", "poison"],
)
def test_an_upload_that_fails_the_batch_fails_alone_and_the_others_land(
    database: Database, sqlstate: str, code: str, attempts: int
) -> None:
    url = make_private_db(database)
    new_project(url, "faulty")
    fail_run_inserts_of_job(url, "bad", sqlstate)
    uploads = (*BATCH[:2], ("bad", BATCH[2][1], BATCH[2][2]), BATCH[3])
    ids = queue(url, "faulty", uploads)
    dsn = sqlalchemy_to_dsn(url)
    config = WorkerConfig(name="batch-test", batch_uploads=8, max_attempts=3)
    with ingest_connection(dsn, "batch-test") as conn, side_connection(dsn, "batch-test") as side:
        # Each drain ends when the queue is empty; a bug-like fault leaves its upload queued.
        for _ in range(3):
            drain(conn, side, config, known_tests=KnownTests())

    status = rows(url, "SELECT status, error_code, attempts FROM upload ORDER BY id")
    # The batch failed once (an attempt of each), then each went alone.
    assert status == [
        ("done", None, 2), ("done", None, 2), ("failed", code, attempts), ("done", None, 2)
    ]  # fmt: skip
    assert rows(url, "SELECT upload_id FROM run ORDER BY upload_id") == [
        (ids[0],), (ids[1],), (ids[3],)
    ]  # fmt: skip
    assert rows(url, "SELECT count(*) FROM test_result") == [(60,)]
    assert_rollups_equal_recomputation(url)
