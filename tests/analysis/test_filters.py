"""Filters over facts, runs and results frames."""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd

from analysis.filters import Filters, filter_facts, filter_results, filter_runs
from ingest.model import results_frame
from model.frames import facts_from_results


def make_runs():
    return pd.DataFrame(
        {
            "run_id": [1, 2, 3, 4],
            "pipeline": ["p1", "p1", "p2", "p3"],
            "job": ["linux", "macos", "linux", "gpu"],
            "branch": ["main", "main", "pr/1", "main"],
            "commit": "c",
            "machine": "large",
            "started_at": pd.to_datetime(
                pd.Series(["2024-03-01T23:00Z", "2024-03-02T01:00Z", "2024-03-03T12:00Z", None]),
                utc=True,
            ),
            "wall_s": np.nan,
            "peak_rss_mib": np.nan,
            "xdist_workers": 1,
            "labels": [
                {"os": "linux", "python": "3.11"},
                {"os": "macos", "python": "3.10"},
                {"os": "linux", "python": "3.10"},
                {"os": "linux", "python": "3.11", "cuda": "12.1"},
            ],
            "partial": False,
            "hidden_rows": 0,
        }
    )


def make_results():
    tests = [
        ("tests/test_models.py::t1", ["slow"]),
        ("tests/test_ops.py::t2", ["slow", "gpu"]),
        ("tests/unit/test_io.py::t3", []),
        ("other/test_x.py::t4", None),
    ]
    rows = [(run_id, nodeid, markers) for run_id in (1, 2, 3, 4) for nodeid, markers in tests]
    frame = results_frame(
        {
            "nodeid": [r[1] for r in rows],
            "file": [r[1].split("::")[0] for r in rows],
            "function": [r[1].split("::")[1] for r in rows],
            "markers": [r[2] for r in rows],
            "outcome": ["passed"] * len(rows),
            "duration_s": [1.0] * len(rows),
        }
    )
    frame["run_id"] = [r[0] for r in rows]
    return frame


def facts():
    return facts_from_results(make_results(), make_runs())


def kept_runs(filters):
    return sorted(filter_runs(make_runs(), filters)["run_id"])


def test_no_filters_keep_everything():
    assert len(filter_facts(facts(), Filters())) == 16
    assert kept_runs(Filters()) == [1, 2, 3, 4]
    assert not Filters().has_test_filters


def test_window_is_inclusive_by_utc_day_and_drops_undated_runs():
    assert kept_runs(Filters(since=date(2024, 3, 2))) == [2, 3]
    assert kept_runs(Filters(until=date(2024, 3, 2))) == [1, 2]
    assert kept_runs(Filters(since=date(2024, 3, 2), until=date(2024, 3, 2))) == [2]
    f = filter_facts(facts(), Filters(since=date(2024, 3, 1), until=date(2024, 3, 1)))
    assert set(f["job"]) == {"linux"}
    assert len(f) == 4


def test_branch_job_and_label_filters():
    assert kept_runs(Filters(branches=("main",))) == [1, 2, 4]
    assert kept_runs(Filters(jobs=("linux", "gpu"))) == [1, 3, 4]
    assert kept_runs(Filters(labels={"os": ("linux",), "python": ("3.11",)})) == [1, 4]
    assert kept_runs(Filters(labels={"python": ("3.10", "3.11")})) == [1, 2, 3, 4]
    # A run without the label key never matches it.
    assert kept_runs(Filters(labels={"cuda": ("12.1", "11.8")})) == [4]
    f = filter_facts(facts(), Filters(labels={"os": ("macos",)}))
    assert set(f["job"]) == {"macos"}


def test_marker_filters_and_unknown_markers():
    f = facts()
    slow = filter_facts(f, Filters(markers=("slow",)))
    assert set(slow["nodeid"]) == {"tests/test_models.py::t1", "tests/test_ops.py::t2"}
    unmarked = filter_facts(f, Filters(markers=("(unmarked)",)))
    assert set(unmarked["nodeid"]) == {"tests/unit/test_io.py::t3"}
    not_slow = filter_facts(f, Filters(exclude_markers=("slow",)))
    # Unknown markers (JUnit) cannot be shown slow, so an exclusion keeps them.
    assert set(not_slow["nodeid"]) == {"tests/unit/test_io.py::t3", "other/test_x.py::t4"}
    assert Filters(markers=("slow",)).has_test_filters


def test_file_globs():
    f = facts()
    assert set(filter_facts(f, Filters(files=("tests/*",)))["file"]) == {
        "tests/test_models.py",
        "tests/test_ops.py",
        "tests/unit/test_io.py",
    }
    assert set(filter_facts(f, Filters(files=("*/test_x.py", "*models*")))["file"]) == {
        "other/test_x.py",
        "tests/test_models.py",
    }


def test_runs_ignore_test_level_filters():
    assert kept_runs(Filters(markers=("slow",), files=("nothing",))) == [1, 2, 3, 4]


def test_results_filter_by_run_and_by_test_with_list_markers():
    kept = filter_results(make_results(), make_runs(), Filters(jobs=("linux",), markers=("gpu",)))
    assert list(kept["run_id"]) == [1, 3]
    assert set(kept["nodeid"]) == {"tests/test_ops.py::t2"}
