"""Changes found at ingest: the production worker pushes each default-branch run into the
series it touched and stores what the batch detector finds over the same runs; a failure in
detection keeps the upload and is retried from the stored results."""

from __future__ import annotations

import random

import pandas as pd
import psycopg

from analysis.changes import detect_changes
from app.db.engine import make_engine
from app.db.projects import get_project
from app.db.uploads import IncomingFile, UploadMetadata, insert_upload
from ingest.change_detection import retry_backlog
from ingest.change_states import SNAPSHOT_EVERY, forget_all
from ingest.worker import WorkerConfig, drain, process_next
from tests.conftest import make_project
from tests.server.conftest import scalar, sqlalchemy_to_dsn

STEP_AT = 25  # the run (0-based) from which test_slow takes 50% longer
RUNS = 50


def _report(i: int, rng: random.Random) -> bytes:
    slow = 1.0 * (1.5 if i >= STEP_AT else 1.0) * rng.uniform(0.98, 1.02)
    cases = [f'<testcase classname="tests.test_a" name="test_slow" time="{slow:.6f}"/>']
    cases += [
        f'<testcase classname="tests.test_b" name="test_{k}" time="{rng.uniform(0.19, 0.21):.6f}"/>'
        for k in range(5)
    ]
    return (
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        + "".join(cases)
        + "</testsuite></testsuites>"
    ).encode()


def _queue_history(
    url: str, *, branch: str = "main", seed: int = 0, slug: str | None = None
) -> str:
    """Queue RUNS uploads of one cell on `branch`, in order, in project `slug` (default: a new
    one); the project's slug."""
    rng = random.Random(seed)
    engine = make_engine(url, pool_size=1)
    try:
        slug = slug or make_project(engine).slug
        ids = []
        for i in range(RUNS):
            with engine.begin() as conn:
                project = get_project(conn, slug)
                assert project is not None
                meta = {"job": "unit", "branch": branch, "commit": f"{i:040x}",
                        # As the client sends it: HEAD, a commit that did not run, the last run.
                        "first_parents": [f"{i:040x}", f"{i:039x}f", f"{i - 1:040x}"]}  # fmt: skip
                receipt = insert_upload(
                    conn, project, [IncomingFile("r.xml", _report(i, rng))],
                    UploadMetadata.of(meta),
                    idempotency_key=None, max_report_bytes=10**9,
                )  # fmt: skip
                ids.append(receipt.id)
    finally:
        engine.dispose()
    return slug


def _drain(url: str) -> None:
    dsn = sqlalchemy_to_dsn(url)
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        drain(conn, side, WorkerConfig(name="changes-test"))


def _changes(url: str) -> list[tuple]:
    with psycopg.connect(sqlalchemy_to_dsn(url)) as conn:
        return conn.execute(
            "SELECT d.kind, coalesce(tc.nodeid, d.key), d.commit_after, d.commit_before, "
            "round(d.median_after_s::numeric, 6), d.position FROM duration_change d "
            "LEFT JOIN test_case tc ON tc.id = CASE WHEN d.kind = 'test' THEN d.key::bigint END "
            "ORDER BY 1, 2"
        ).fetchall()


def _batch_changes(url: str) -> list[tuple]:
    """The batch detector over every stored series of the database, as _changes lists them."""
    with psycopg.connect(sqlalchemy_to_dsn(url)) as conn:
        rows = conn.execute(
            "SELECT tc.nodeid, tc.file, r.id, r.commit_sha, r.started_at, tr.duration_s "
            "FROM test_result tr JOIN run r ON r.id = tr.run_id JOIN test_case tc "
            "ON tc.id = tr.test_id ORDER BY r.id"
        ).fetchall()
    frame = pd.DataFrame(rows, columns=["nodeid", "file", "run_id", "commit", "started_at", "d"])
    found = []
    for kind, column in (("test", "nodeid"), ("file", "file")):
        series = frame.groupby([column, "run_id", "commit", "started_at"], sort=False)["d"].sum()
        for name, part in series.reset_index().groupby(column, sort=True):
            points = part.rename(columns={"d": "duration_s"})
            for change in detect_changes(points):
                found.append(
                    (kind, name, change.commit_after, change.commit_before,
                     round(change.median_after_s, 6), change.index)
                )  # fmt: skip
    return sorted(found, key=lambda t: (t[0], t[1]))


def test_ingest_finds_the_step_the_batch_detector_finds(private_db: str) -> None:
    _queue_history(private_db)
    _drain(private_db)
    found = _changes(private_db)
    named = {(kind, name): commit for kind, name, commit, *_ in found}
    assert named == {
        ("test", "tests/test_a.py::test_slow"): f"{STEP_AT:040x}",
        ("file", "tests/test_a.py"): f"{STEP_AT:040x}",
    }, found
    assert [tuple(map(str, r)) for r in found] == [
        tuple(map(str, r)) for r in _batch_changes(private_db)
    ]
    (_, _, _, before, median_after, position) = found[1]
    assert before == f"{STEP_AT - 1:040x}"
    assert position == STEP_AT
    assert 1.45 < float(median_after) < 1.55
    with psycopg.connect(sqlalchemy_to_dsn(private_db)) as conn:
        between = conn.execute(
            "SELECT DISTINCT between_commits, between_complete FROM duration_change"
        ).fetchall()
    assert between == [([f"{STEP_AT:039x}f"], True)]


def _watched(url: str) -> list[tuple[str, str]]:
    with psycopg.connect(sqlalchemy_to_dsn(url)) as conn:
        rows = conn.execute(
            "SELECT DISTINCT p.slug, c.branch FROM change_log s JOIN cell c "
            "ON c.id = s.cell_id JOIN project p ON p.id = c.project_id"
        ).fetchall()
    return sorted((str(a), str(b)) for a, b in rows)


def test_workers_without_the_states_in_memory_read_snapshot_and_log(private_db: str) -> None:
    # Each upload taken by a worker that holds nothing in memory: the states come from the
    # snapshot (rewritten every SNAPSHOT_EVERY uploads) and the log after it.
    _queue_history(private_db)
    dsn = sqlalchemy_to_dsn(private_db)
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        while True:
            forget_all()
            if process_next(conn, side, WorkerConfig(name="cold")) is None:
                break
    snapshots = scalar(private_db, "SELECT count(*) FROM change_state")
    assert snapshots == 1
    assert scalar(private_db, "SELECT min(seq) FROM change_log") == SNAPSHOT_EVERY
    assert [tuple(map(str, r)) for r in _changes(private_db)] == [
        tuple(map(str, r)) for r in _batch_changes(private_db)
    ]
    assert len(_changes(private_db)) == 2


def test_only_the_default_branch_is_watched(private_db: str) -> None:
    both = _queue_history(private_db, branch="topic")
    _queue_history(private_db, branch="main", seed=1, slug=both)
    only = _queue_history(private_db, branch="topic", seed=2)
    _drain(private_db)
    # `both`'s topic runs came first, when topic was its only branch (so its default then).
    assert _watched(private_db) == sorted([(both, "main"), (both, "topic"), (only, "topic")])
    with psycopg.connect(sqlalchemy_to_dsn(private_db), autocommit=True) as conn:
        conn.execute("UPDATE project SET default_branch = 'release' WHERE slug = %s", (only,))
        conn.execute("DELETE FROM change_log")
    _queue_history(private_db, branch="topic", seed=3, slug=both)
    _queue_history(private_db, branch="topic", seed=4, slug=only)
    _drain(private_db)
    assert _watched(private_db) == []  # main is both's default; only's is set to release


def test_a_failing_detection_keeps_the_upload_and_is_retried(private_db: str) -> None:
    dsn = sqlalchemy_to_dsn(private_db)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            """
            CREATE FUNCTION fault_series() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'injected detection fault'; END $$;
            CREATE TRIGGER fault_series BEFORE INSERT ON change_log
                FOR EACH ROW EXECUTE FUNCTION fault_series();
            """
        )
    _queue_history(private_db)
    _drain(private_db)
    with psycopg.connect(dsn) as conn:
        done = conn.execute("SELECT count(*) FROM upload WHERE status = 'done'").fetchone()
        backlog = conn.execute("SELECT count(*), max(error) FROM change_backlog").fetchone()
    assert done == (RUNS,)
    assert backlog is not None
    assert backlog[0] == RUNS
    assert "injected detection fault" in backlog[1]
    assert _changes(private_db) == []
    with psycopg.connect(dsn) as conn:
        assert retry_backlog(conn) == 0  # still failing: kept, attempts counted
        conn.commit()
        row = conn.execute("SELECT count(*), max(attempts) FROM change_backlog").fetchone()
        assert row == (RUNS, 1)  # only each cell's oldest run is tried
        conn.execute("DROP TRIGGER fault_series ON change_log")
        conn.commit()
        assert retry_backlog(conn) == RUNS
    assert [tuple(map(str, r)) for r in _changes(private_db)] == [
        tuple(map(str, r)) for r in _batch_changes(private_db)
    ]
    assert len(_changes(private_db)) == 2
