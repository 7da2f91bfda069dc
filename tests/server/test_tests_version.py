"""The tests' data version (the key of the kept test dictionary) moves when, and only when,
a test case row of the project is written or removed, and is read without touching the
test_case table (O(1), whatever the number of tests)."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
from sqlalchemy import Engine, text

from app.db.repository import tests_version as version_of_tests
from ingest.merge import merge_reports
from tests.conftest import Database, ProjectFixture, make_project
from tests.server.test_store import _report, _store


def _send(
    database: Database, project: ProjectFixture, names: list[str], markers: list[str]
) -> None:
    report = _report(
        nodeid=[f"t.py::{n}" for n in names],
        file=["t.py"] * len(names),
        function=names,
        markers=[markers] * len(names),
        outcome=["passed"] * len(names),
        duration_s=[1.0 + i for i in range(len(names))],
    )
    _store(database, project, merge_reports([report]), started_at=datetime.now(UTC))


def test_version_moves_when_and_only_when_test_rows_change(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    other = make_project(engine)

    def version(of: ProjectFixture = project) -> object:
        with engine.connect() as conn:
            return version_of_tests(conn, of.id)

    start = version()
    _send(database, project, ["a", "b"], ["slow"])
    added = version()
    assert added != start  # new tests
    _send(database, project, ["a", "b"], ["slow"])
    assert version() == added  # the same tests again: results only
    _send(database, project, ["a"], ["slow"])
    assert version() == added  # a subset of known tests
    _send(database, project, ["a", "b"], ["gpu"])
    remarked = version()
    assert remarked != added  # a test's markers changed
    other_before = version(other)
    _send(database, other, ["a"], [])
    assert version() == remarked  # another project's tests are not this project's
    assert version(other) != other_before
    with engine.begin() as conn:
        conn.execute(
            text("DELETE FROM test_case WHERE project_id = :p AND function = 'b'"),
            {"p": project.id},
        )
    deleted = version()
    assert deleted != remarked  # a removed test (an operator's delete, a retention)
    with engine.begin() as conn:
        conn.execute(
            text("UPDATE test_case SET file = file WHERE project_id = :p"), {"p": project.id}
        )
    assert version() != deleted  # any rewrite of a row, whoever does it


def test_a_rolled_back_write_leaves_the_version(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    _send(database, project, ["a"], [])
    with engine.connect() as conn:
        before = version_of_tests(conn, project.id)
    with psycopg.connect(database.dsn) as conn:
        conn.execute("DELETE FROM test_case WHERE project_id = %s", (project.id,))
        conn.rollback()
    with engine.connect() as conn:
        assert version_of_tests(conn, project.id) == before


def test_version_is_read_without_touching_test_case(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    _send(database, project, ["a"], [])
    with psycopg.connect(database.dsn) as locker:
        # Nobody may even read test_case while this lock is held: a version read that scanned
        # the table would wait and run into the lock timeout.
        locker.execute("LOCK TABLE test_case IN ACCESS EXCLUSIVE MODE")
        with engine.connect() as conn:
            conn.execute(text("SET LOCAL lock_timeout = '2s'"))
            assert version_of_tests(conn, project.id) is not None
            conn.rollback()
        locker.rollback()
