"""The first read after a commit re-reads what the commit touched, not the whole open week.

Kept answers are dropped on every commit (the data version moves); the next read used to copy
every rollup row of the open week again, so a 20-result upload cost the read as much as the
week's history. Now the open week's per-test rows are kept with the data version they hold and
only the rows of the tests the new runs touched are read again. Counted in rows copied, and
checked against a from-scratch read after every kind of change (new tests, new cells, a run
dated into a closed week, a prune).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Connection, Engine, event, text

import app.db.rollup_reads as rollup_reads
import app.services.project_reads as project_reads
from app.db.retention import prune_before
from app.services.hot_reads import HotReads
from app.services.project_reads import FrameCache, SharedFrames, project_rollup, window_filters
from ingest.merge import merge_reports
from tests.conftest import Database, ProjectFixture, make_project
from tests.server.test_store import _report, _store

HISTORY_TESTS = 3_000
QUESTIONS: tuple[tuple[str, int | None, dict[str, Any]], ...] = (
    ("test", 7, {}),
    ("test", 7, {"limit": 50}),
    ("job", 7, {}),
    ("file", 7, {}),
    ("function", 7, {}),
    ("label:python", 7, {}),
    ("test", 60, {}),
    ("job", 60, {}),
)


def _today_noon() -> datetime:
    return datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(hours=1)


def _run(
    database: Database,
    project: ProjectFixture,
    tests: range,
    *,
    seconds: float,
    job: str = "unit",
    started_at: datetime | None = None,
    python: str = "3.11",
) -> int:
    names = [f"tests/test_m{i % 40}.py::test_case_{i}" for i in tests]
    report = _report(
        nodeid=names,
        file=[n.split("::")[0] for n in names],
        function=[n.split("::")[1] for n in names],
        outcome=["passed"] * len(names),
        duration_s=[seconds + (i % 13) / 100 for i in tests],
    )
    return _store(
        database,
        project,
        merge_reports([report]),
        job=job,
        started_at=started_at or _today_noon(),
        labels={"python": python},
    )


@pytest.fixture
def copied_rows(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Rows each rollup read of the test's own thread copies from the database, counted at
    the COPY readers (a read warmer's thread in this process copies rows of its own)."""
    copied = {"rows": 0}
    reader = threading.get_ident()
    for name in ("copy_frame", "copy_numeric_frame"):
        original = getattr(rollup_reads, name)

        def counted(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            frame = _original(*args, **kwargs)
            if threading.get_ident() == reader:
                copied["rows"] += len(frame)
            return frame

        monkeypatch.setattr(rollup_reads, name, counted)
    return copied


def _answers(engine: Engine, project_id: int, shared: SharedFrames) -> list[pd.DataFrame]:
    # Not noted where this process's read warmer (of a live server, in the same test worker)
    # would see them: its refresh would copy rows the counts here are about.
    private = HotReads()
    with engine.connect() as conn:
        cache = FrameCache.for_project(conn, project_id, shared)
        return [
            project_rollup(
                conn, project_id, window_filters(days), by=by, cache=cache, hot=private, **kw
            ).rows
            for by, days, kw in QUESTIONS
        ]


def _same(kept: list[pd.DataFrame], fresh: list[pd.DataFrame]) -> None:
    """Equal answers: the same rows with the same figures (float sums may differ in the last
    bits, which can swap two tied rows: the order is compared by its totals)."""
    for (by, days, _), a, b in zip(QUESTIONS, kept, fresh, strict=True):
        assert len(a) == len(b), (by, days)
        assert a["total_s"].to_numpy() == pytest.approx(b["total_s"].to_numpy(), rel=1e-9)
        pd.testing.assert_frame_equal(
            a.sort_values("key").reset_index(drop=True),
            b.sort_values("key").reset_index(drop=True),
            check_exact=False,
            rtol=1e-9,
        )


def test_a_small_upload_costs_the_next_read_its_own_rows(
    engine: Engine, database: Database, copied_rows: dict[str, int]
) -> None:
    project = make_project(engine)
    for day in range(3):  # three runs of the whole suite this week (or today, on a Monday)
        _run(database, project, range(HISTORY_TESTS), seconds=0.5 + day / 10)
    shared = SharedFrames()
    copied_rows["rows"] = 0
    _answers(engine, project.id, shared)
    first = copied_rows["rows"]
    assert first >= HISTORY_TESTS  # the cold read copies the week's per-test rows

    _run(database, project, range(0, 40), seconds=2.0)  # a 40-result upload of known tests
    copied_rows["rows"] = 0
    kept = _answers(engine, project.id, shared)
    after_small = copied_rows["rows"]
    # Its own tests' rows (once per question that reads per-test rows) and the small
    # per-file table, not the week's 3,000 tests again.
    assert after_small < first / 5, (first, after_small)
    _same(kept, _answers(engine, project.id, SharedFrames()))


def test_incremental_reads_equal_a_fresh_read_after_every_kind_of_change(
    engine: Engine, database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    folds = {"done": 0}
    fold = project_reads._fold

    def counted_fold(
        kept: pd.DataFrame, touched: tuple[int, ...], fresh: pd.DataFrame
    ) -> pd.DataFrame | None:
        out = fold(kept, touched, fresh)
        folds["done"] += out is not None
        return out

    monkeypatch.setattr(project_reads, "_fold", counted_fold)
    project = make_project(engine)
    today = _today_noon()
    # Two days back, or today's Monday when that is later: still the open week.
    earlier = max(today - timedelta(days=2), today - timedelta(days=today.weekday()))
    _run(database, project, range(500), seconds=0.3)
    _run(database, project, range(500), seconds=0.4, job="docs", python="3.12")
    shared = SharedFrames()
    _answers(engine, project.id, shared)

    changes: list[tuple[str, Any]] = [
        ("known tests again", lambda: _run(database, project, range(100), seconds=1.0)),
        ("new tests", lambda: _run(database, project, range(500, 650), seconds=0.2)),
        ("a new cell", lambda: _run(database, project, range(50), seconds=0.7, job="gpu")),
        (
            "a run dated earlier in the open week",
            lambda: _run(database, project, range(300, 420), seconds=0.6, started_at=earlier),
        ),
        (
            "a run dated into a closed week",
            lambda: _run(
                database, project, range(200), seconds=0.9, started_at=today - timedelta(days=21)
            ),
        ),
        ("a prune", lambda: _prune(engine, today.date() - timedelta(days=14))),
        ("known tests after the prune", lambda: _run(database, project, range(10), seconds=3.0)),
        ("known tests once more", lambda: _run(database, project, range(5, 30), seconds=0.1)),
    ]
    folded: dict[str, int] = {}
    for name, change in changes:
        change()
        before = folds["done"]
        kept = _answers(engine, project.id, shared)
        folded[name] = folds["done"] - before
        try:
            _same(kept, _answers(engine, project.id, SharedFrames()))
        except AssertionError as exc:
            raise AssertionError(f"after {name}: {exc}") from exc
    # The incremental path was taken where runs were only added since the kept rows, and not
    # across the prune (the rows kept from before it are read afresh).
    assert folded["known tests again"] > 0
    assert folded["new tests"] > 0
    assert folded["a prune"] == 0
    assert folded["known tests after the prune"] == 0
    assert folded["known tests once more"] > 0


def _prune(engine: Engine, cutoff: date) -> None:
    with engine.begin() as conn:
        prune_before(conn, cutoff)


def _partitions_planned(conn: Connection, run: Callable[[], object]) -> set[str]:
    """The test_result partitions the statements `run` executes on `conn` plan to scan: each
    statement explained again with its own parameters."""
    executed: list[tuple[str, Any]] = []

    def seen(_c: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        executed.append((statement, parameters))

    event.listen(conn, "before_cursor_execute", seen)
    try:
        run()
    finally:
        event.remove(conn, "before_cursor_execute", seen)
    names: set[str] = set()
    raw = conn.connection.driver_connection
    assert raw is not None
    for statement, parameters in executed:
        (plan,) = raw.execute("EXPLAIN (FORMAT JSON) " + statement, parameters).fetchone()  # type: ignore[union-attr]
        names |= set(re.findall(r'"Relation Name": "(test_result_\d+)"', json.dumps(plan)))
    return names


def test_tests_stored_reads_only_the_partitions_of_the_new_runs_days(
    engine: Engine, database: Database
) -> None:
    """The tests new runs touched, equal to a plain reading of every partition, read only from
    the days those runs are dated (was: every partition from the open week's Monday on)."""
    project = make_project(engine)
    today = _today_noon()
    old = [
        _run(database, project, range(i * 10, i * 10 + 30), seconds=0.5,
             started_at=today - timedelta(days=d))
        for i, d in enumerate((4, 2, 0))
    ]  # fmt: skip
    _run(database, project, range(100, 140), seconds=0.5, started_at=today - timedelta(days=2))
    new = _run(database, project, range(140, 150), seconds=0.5, started_at=today)
    since = (today - timedelta(days=6)).date()
    with engine.connect() as conn:
        plain = conn.execute(
            text(
                "SELECT DISTINCT test_id FROM test_result WHERE project_id = :p"
                " AND run_id > :a AND run_id <= :u"
            ),
            {"p": project.id, "a": max(old), "u": new},
        ).scalars()
        expected = sorted(int(t) for t in plain)
        assert len(expected) == 50
        touched: list[tuple[int, ...]] = []
        scanned = _partitions_planned(
            conn,
            lambda: touched.append(
                project_reads._tests_stored(conn, project.id, since, max(old), new)
            ),
        )
        assert sorted(touched[0]) == expected
        # From today on: the run dated two days back does not count.
        later = project_reads._tests_stored(conn, project.id, today.date(), max(old), new)
        todays = conn.execute(
            text("SELECT test_id FROM test_result WHERE project_id = :p AND run_id = :u"),
            {"p": project.id, "u": new},
        ).scalars()
        assert sorted(later) == sorted(int(t) for t in todays)
        assert len(later) == 10
    assert scanned == {f"test_result_{today - timedelta(days=d):%Y%m%d}" for d in (2, 0)}, scanned
