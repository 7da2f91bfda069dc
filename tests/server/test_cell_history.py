"""Recommendations read one matrix cell's results, and pick the same cell as a full read."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any
from unittest.mock import patch

import pandas as pd
import pytest
from sqlalchemy import Connection, Engine

from analysis.filters import Filters
from analysis.split.plan import SplitOptions
from app.db.projects import get_project
from app.db.repository import load_run_results, load_runs, run_days
from app.schemas.split import SplitPlan
from app.services.project_reads import SharedFrames, run_results
from app.services.recommendations import RecommendationError, load_history, split_recommendation
from ingest.merge import merge_reports
from tests.conftest import Database, ProjectFixture
from tests.server.test_store import _report, _store

# Per cell: seconds of each of its three tests; "python=3.12" holds the most test time.
CELLS = {"python=3.11": 2.0, "python=3.12": 5.0, "python=3.13": 1.0}


@pytest.fixture
def matrix(database: Database, project: ProjectFixture) -> ProjectFixture:
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=2)
    for day in range(2):
        for cell, seconds in CELLS.items():
            report = _report(
                nodeid=[f"tests/test_m.py::test_{i}" for i in range(3)],
                file=["tests/test_m.py"] * 3,
                function=[f"test_{i}" for i in range(3)],
                outcome=["passed"] * 3,
                duration_s=[seconds] * 3,
            )
            _store(
                database,
                project,
                merge_reports([report]),
                job=f"py{cell[-4:]}",
                labels=dict([cell.split("=")]),
                started_at=start + timedelta(days=day, hours=1),
            )
    return project


def test_one_cell_history_reads_the_heaviest_cell_only(
    engine: Engine, matrix: ProjectFixture
) -> None:
    with engine.connect() as conn:
        project = get_project(conn, matrix.slug)
        assert project is not None
        history = load_history(conn, project, Filters(), one_cell=True)
        full = load_history(conn, project, Filters())
        assert history.cells == tuple(sorted(CELLS))
        assert set(history.runs["labels_key"]) == {"python=3.12"}
        assert len(history.results) == 2 * 3
        assert len(full.results) == 2 * 3 * len(CELLS)
        # The plan is the same whether the page read one cell or all of them.
        one = split_recommendation(conn, project, Filters(), options=SplitOptions())
        every = split_recommendation(conn, project, Filters(), options=SplitOptions(), history=full)
        assert SplitPlan.answer(one) == SplitPlan.answer(every)
        assert one.cell == "python=3.12"
        assert one.cells == tuple(sorted(CELLS))


def test_one_cell_history_of_a_named_or_unknown_cell(
    engine: Engine, matrix: ProjectFixture
) -> None:
    with engine.connect() as conn:
        project = get_project(conn, matrix.slug)
        assert project is not None
        named = load_history(conn, project, Filters(), one_cell=True, cell="python=3.13")
        assert set(named.runs["labels_key"]) == {"python=3.13"}
        assert named.results["duration_s"].tolist() == [1.0] * 6
        with pytest.raises(RecommendationError, match=r"no cell 'python=3\.9'"):
            load_history(conn, project, Filters(), one_cell=True, cell="python=3.9")


def test_run_results_are_kept_per_run_and_read_once(
    database: Database, engine: Engine, matrix: ProjectFixture
) -> None:
    shared = SharedFrames()
    reads: list[list[int]] = []

    def counting(conn: Connection, project_id: int, runs: Sequence[tuple[int, date]]) -> Any:
        reads.append(sorted(run_id for run_id, _day in runs))
        return load_run_results(conn, project_id, runs)

    with engine.connect() as conn:
        first_ids = [int(i) for i in load_runs(conn, matrix.id, Filters())["run_id"]]
    with engine.connect() as conn, patch("app.services.project_reads.load_run_results", counting):
        first = run_results(conn, matrix.id, first_ids, shared)
        again = run_results(conn, matrix.id, first_ids, shared)
    assert len(first) == len(again) == 2 * 3 * len(CELLS)
    assert reads == [sorted(first_ids)]
    newer = _store(
        database,
        matrix,
        merge_reports(
            [
                _report(
                    nodeid=["tests/test_m.py::test_0"],
                    file=["tests/test_m.py"],
                    function=["test_0"],
                    outcome=["failed"],
                    duration_s=[9.0],
                )
            ]
        ),
        job="py3.12",
        labels={"python": "3.12"},
    )
    with engine.connect() as conn, patch("app.services.project_reads.load_run_results", counting):
        latest = run_results(conn, matrix.id, [*first_ids, newer], shared)
    # Only the new run was read; its row is there with its own values.
    assert reads[-1] == [newer]
    row = latest[latest["run_id"] == newer]
    assert row["outcome"].tolist() == ["failed"]
    assert row["duration_s"].tolist() == [9.0]
    with engine.connect() as conn:
        direct = load_run_results(conn, matrix.id, run_days(conn, matrix.id, [*first_ids, newer]))
    key = ["run_id", "test_id"]
    pd.testing.assert_frame_equal(
        latest.sort_values(key).reset_index(drop=True),
        direct.sort_values(key).reset_index(drop=True),
    )
