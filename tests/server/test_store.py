"""The store against a real Postgres: rows, test dictionary, rollups."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd
import psycopg
import pytest
from sqlalchemy import Engine, text

from ingest.merge import MergedRun, merge_reports
from ingest.model import ParsedReport, results_frame
from ingest.store import RunMetadata, StoreResult, compute_test_ids, store_run
from ingest.worker import WorkerConfig, process_next
from tests.conftest import Database, ProjectFixture, compact_rollups


def _report(fmt: str = "junit", **columns: Any) -> ParsedReport:
    return ParsedReport(format=fmt, results=results_frame(columns))  # type: ignore[arg-type]


def _store(database: Database, project: ProjectFixture, merged: MergedRun, **meta: Any) -> int:
    return _store_result(database, project, merged, **meta).run_id


def _store_result(
    database: Database, project: ProjectFixture, merged: MergedRun, **meta: Any
) -> StoreResult:
    with psycopg.connect(database.dsn) as conn:
        # Marked done: a worker of a live server in this process must not claim it.
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
            "RETURNING id",
            (project.id, str(meta).encode() + bytes(str(datetime.now()), "ascii")),
        ).fetchone()[0]  # type: ignore[index]
        stored = store_run(
            conn,
            project_id=project.id,
            upload_id=upload_id,
            meta=RunMetadata(
                job=meta.get("job", "unit"),
                started_at=meta.get("started_at", datetime(2026, 11, 30, 12, tzinfo=UTC)),
                labels=meta.get("labels", {}),
                peak_rss_mib=meta.get("peak_rss_mib"),
            ),
            merged=merged,
        )
        conn.commit()
    return stored


def test_ids_are_deterministic_per_project() -> None:
    nodeids = pd.Series(["a.py::t", "b.py::u", "a.py::t"])
    first = compute_test_ids(1, nodeids)
    assert first[0] == first[2]
    assert first[0] != first[1]
    assert (first >= 0).all()
    assert list(compute_test_ids(1, nodeids)) == list(first)
    assert compute_test_ids(2, nodeids)[0] != first[0]
    # Pinned: ids are persisted, so a change of hash would split every test's history.
    assert int(compute_test_ids(1, pd.Series(["tests/test_x.py::test_y"]))[0]) == (
        5240747452821934928
    )


def test_store_writes_results_tests_and_rollups(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    report = _report(
        nodeid=["t.py::a", "t.py::b[1]", "u.py::c"],
        file=["t.py", "t.py", "u.py"],
        function=["a", "b", "c"],
        params=[None, "1", None],
        outcome=["passed", "failed", "passed"],
        duration_s=[1.5, 2.0, None],
        markers=[["slow"], [], None],
        message=[None, 'boom, "quoted"\nsecond line', None],
    )
    run_id = _store(database, project, merge_reports([report]))
    _store(database, project, merge_reports([report]))
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT count(*), sum(duration_s) FROM test_result WHERE run_id = :r"),
            {"r": run_id},
        ).one()
        assert rows == (3, 3.5)
        message = conn.execute(
            text("SELECT message FROM test_result WHERE run_id = :r AND outcome = 'failed'"),
            {"r": run_id},
        ).scalar_one()
        assert message == 'boom, "quoted"\nsecond line'
        cases = conn.execute(
            text("SELECT nodeid, markers FROM test_case WHERE project_id = :p ORDER BY nodeid"),
            {"p": project.id},
        ).all()
        assert [c[0] for c in cases] == ["t.py::a", "t.py::b[1]", "u.py::c"]
        assert cases[0][1] == ["slow"]
        assert cases[1][1] == []
        assert cases[2][1] is None
        per_test = text(
            "SELECT sum(runs), sum(known), sum(total_s), sum(failures) FROM rollup_daily "
            "WHERE project_id = :p"
        )
        # The ingest leaves the per-test rollups to compaction (a live server's worker in this
        # database may have run it already; tests/server/test_rollup_compaction.py times it).
        compact_rollups(database.dsn, project.id)
        conn.rollback()
        assert conn.execute(per_test, {"p": project.id}).one() == (6, 4, 7.0, 2)
        files = conn.execute(
            text(
                "SELECT file, runs, total_s FROM rollup_file_daily WHERE project_id = :p "
                "ORDER BY file"
            ),
            {"p": project.id},
        ).all()
        assert files == [("t.py", 4, 7.0), ("u.py", 2, 0.0)]
        run = conn.execute(
            text("SELECT test_s, tests, missing, day FROM run WHERE id = :r"), {"r": run_id}
        ).one()
        assert run[:3] == (3.5, 3, 1)
        assert str(run[3]) == "2026-11-30"


def test_junit_and_durations_of_one_job_merge() -> None:
    junit = _report(
        nodeid=["t.py::a", "t.py::b"],
        function=["a", "b"],
        outcome=["failed", "passed"],
        duration_s=[None, 0.5],
    )
    durations = _report(
        "durations",
        nodeid=["t.py::a", "t.py::z"],
        function=["a", "z"],
        outcome=["passed", "passed"],
        setup_s=[1.0, None],
        call_s=[2.0, 4.0],
        duration_s=[3.0, 4.0],
    )
    merged = merge_reports([junit, durations]).results.set_index("nodeid")
    assert merged.loc["t.py::a", "outcome"] == "failed"  # outcome from JUnit
    assert merged.loc["t.py::a", "setup_s"] == 1.0  # phases from durations
    assert merged.loc["t.py::a", "duration_s"] == 3.0
    assert merged.loc["t.py::b", "duration_s"] == 0.5
    assert merged.loc["t.py::z", "call_s"] == 4.0  # only in durations: kept
    assert len(merged) == 3


@pytest.mark.parametrize("days", [2])
def test_partitions_per_day(
    database: Database, engine: Engine, project: ProjectFixture, days: int
) -> None:
    report = _report(nodeid=["p.py::x"], function=["x"], outcome=["passed"], duration_s=[1.0])
    for d in range(days):
        _store(
            database,
            project,
            merge_reports([report]),
            started_at=datetime(2026, 10, 1 + d, 9, tzinfo=UTC),
        )
    with engine.connect() as conn:
        names = conn.execute(
            text("SELECT to_regclass('test_result_20261001'), to_regclass('test_result_20261002')")
        ).one()
    assert all(names)


def test_two_runs_in_one_transaction(database: Database, engine: Engine) -> None:
    from tests.conftest import make_project

    project = make_project(engine)
    report = _report(
        nodeid=["a.py::x", "a.py::y"],
        function=["x", "y"],
        outcome=["passed"] * 2,
        duration_s=[1.0, 2.0],
    )
    with psycopg.connect(database.dsn) as conn:
        for job in ("one", "two"):
            upload_id = conn.execute(
                "INSERT INTO upload (project_id, job, content_hash, status) "
                "VALUES (%s, %s, 'h', 'done') RETURNING id",
                (project.id, job),
            ).fetchone()[0]  # type: ignore[index]
            store_run(
                conn,
                project_id=project.id,
                upload_id=upload_id,
                meta=RunMetadata(job=job, started_at=datetime(2026, 11, 29, tzinfo=UTC)),
                merged=merge_reports([report]),
            )
        conn.commit()
    compact_rollups(database.dsn, project.id)
    with engine.connect() as conn:
        total = conn.execute(
            text("SELECT count(*), sum(total_s) FROM rollup_daily WHERE project_id = :p"),
            {"p": project.id},
        ).one()
    assert total == (4, 6.0)


def test_an_upload_without_files_fails_instead_of_storing_an_empty_run(
    database: Database, project: ProjectFixture
) -> None:
    with psycopg.connect(database.dsn) as conn:
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash) VALUES (%s, 'empty') RETURNING id",
            (project.id,),
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
    with (
        psycopg.connect(database.dsn) as conn,
        psycopg.connect(database.dsn, autocommit=True) as side,
    ):
        # Claims the oldest queued upload: drain until ours is done.
        while process_next(conn, side, WorkerConfig()) not in (upload_id, None):
            pass
        conn.commit()
        status, code, runs = conn.execute(
            "SELECT status, error_code, (SELECT count(*) FROM run WHERE upload_id = u.id) "
            "FROM upload u WHERE id = %s",
            (upload_id,),
        ).fetchone()  # type: ignore[misc]
    assert (status, code, runs) == ("failed", "no-report-files", 0)


def test_integer_measures_are_stored_as_integers_on_both_copy_paths(
    database: Database, project: ProjectFixture
) -> None:
    # Rows with a message take the text COPY, the others the binary one: a measure must be
    # the same integer either way, and unknown stays NULL.
    merged = merge_reports(
        [
            _report(
                "laptime-json",
                nodeid=["m.py::t0", "m.py::t1", "m.py::t2", "m.py::t3"],
                outcome=["failed", "passed", "failed", "passed"],
                duration_s=[1.0, 2.0, 3.0, 4.0],
                message=["boom\tat line 3", None, "x", None],
                seq=[3.0, 4.0, float("nan"), float("nan")],
                heap_scans=[2.0, 7.0, float("nan"), 1.0],
                heap_objects=[12_000_000_000.0, 5.0, float("nan"), float("nan")],
            )
        ]
    )
    run_id = _store(database, project, merged)
    with psycopg.connect(database.dsn) as conn:
        rows = conn.execute(
            "SELECT c.nodeid, t.seq, t.heap_scans, t.heap_objects, t.message FROM test_result t "
            "JOIN test_case c ON c.project_id = t.project_id AND c.id = t.test_id "
            "WHERE t.run_id = %s ORDER BY c.nodeid",
            (run_id,),
        ).fetchall()
    assert rows == [
        ("m.py::t0", 3, 2, 12_000_000_000, "boom\tat line 3"),
        ("m.py::t1", 4, 7, 5, None),
        ("m.py::t2", None, None, None, "x"),
        ("m.py::t3", None, 1, None, None),
    ]
