"""Duration estimates: median over a recent window, every phase counted, gaps flagged."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.estimate import estimate_durations, estimate_new_tests
from ingest.model import results_frame
from tests.planner.history import results_for, run_row, runs_frame


def test_median_over_the_most_recent_window() -> None:
    # Run 4 is the oldest by start time although its id is the largest.
    durations = {1: 10.0, 2: 12.0, 3: 100.0, 4: 1000.0}
    starts = {1: "2024-01-02", 2: "2024-01-03", 3: "2024-01-04", 4: "2024-01-01"}
    results = pd.concat(
        [results_for(r, {"t.py::a": d}) for r, d in durations.items()], ignore_index=True
    )
    runs = runs_frame([run_row(r, started_at=starts[r]) for r in durations])
    est = estimate_durations(results, runs, window_runs=3)
    # Window = runs 1, 2, 3 (10, 12, 100): median 12; the 1000 s run is out of the window.
    assert est.loc["t.py::a", "duration_s"] == 12.0
    assert est.loc["t.py::a", "samples"] == 3
    assert est.loc["t.py::a", "source"] == "history"
    assert estimate_durations(results, runs, window_runs=10).loc["t.py::a", "duration_s"] == 56.0


def test_phases_are_summed_when_the_total_is_missing() -> None:
    results = results_frame(
        {
            "nodeid": ["t.py::a"],
            "file": ["t.py"],
            "function": ["a"],
            "outcome": ["passed"],
            "setup_s": [2.0],
            "call_s": [5.0],
            "teardown_s": [0.5],
        }
    )
    results["run_id"] = 1
    est = estimate_durations(results, runs_frame([run_row(1)]))
    assert est.loc["t.py::a", "duration_s"] == 7.5


def test_tests_without_history_use_their_file_then_the_project() -> None:
    results = results_for(1, {"a.py::x": 4.0, "a.py::y": 8.0, "b.py::z": 30.0})
    # a.py::w ran but its duration is unknown: from its file's median (6).
    unknown = results_for(1, {"a.py::w": 0.0})
    unknown["duration_s"] = float("nan")
    results = pd.concat([results, unknown], ignore_index=True)
    est = estimate_durations(results, runs_frame([run_row(1)]))
    assert est.loc["a.py::w", "duration_s"] == 6.0
    assert est.loc["a.py::w", "source"] == "file"
    new = estimate_new_tests(est["duration_s"], ["a.py::new", "c.py::new", "b.py::z"])
    assert new.loc["a.py::new", "duration_s"] == 6.0  # median of a.py's 4, 6, 8
    assert new.loc["a.py::new", "source"] == "file"
    # c.py is unknown: project median of 4, 6, 8, 30 = 7.
    assert new.loc["c.py::new", "duration_s"] == 7.0
    assert new.loc["c.py::new", "source"] == "project"
    assert new.loc["b.py::z", "source"] == "history"
    assert list(new.index) == ["a.py::new", "c.py::new", "b.py::z"]


def test_no_history_at_all_gives_equal_guesses() -> None:
    new = estimate_new_tests(pd.Series(dtype="float64"), ["a.py::x", "b.py::y"])
    assert new["duration_s"].tolist() == [1.0, 1.0]
    assert set(new["source"]) == {"default"}


def test_window_must_be_positive() -> None:
    results = results_for(1, {"a.py::x": 1.0})
    with pytest.raises(ValueError, match="window_runs"):
        estimate_durations(results, runs_frame([run_row(1)]), window_runs=0)
