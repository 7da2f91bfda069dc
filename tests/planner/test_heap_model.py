"""Heap-bound test time on a hand-built history whose heap is known; every number worked out.

The run: 10,000 tracked objects at collection start, 1,000 more per collected test (10 tests:
20,000 after collection), 1,000 more per test run (30,000 after the tests). The last test,
b.py::leak, scans the heap: its scan saw 29,000 objects (9 tests ran before it) and its call
took 2.9 s; b.py::gc spends 0.5 of its 1.5 s in gc.collect().
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analysis.split.heap_model import align_heap_profile, fit_heap_profile
from analysis.split.plan import SplitOptions, plan_splits
from tests.planner.history import results_for, run_row, runs_frame

A = {f"a.py::t{i}": 1.0 for i in range(5)}
B = {"b.py::t0": 1.0, "b.py::t1": 1.0, "b.py::t2": 1.0, "b.py::gc": 1.5, "b.py::leak": 2.9}


def history(
    *, census: bool = True, measured_heap: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame]:
    durations = {**A, **B}
    results = results_for(1, durations)
    results["call_s"] = results["duration_s"]
    results["setup_s"] = 0.0
    results["cpu_s"] = results["duration_s"]
    results["seq"] = np.arange(len(results), dtype="float64")
    results["gc_s"] = [0.5 if n == "b.py::gc" else 0.0 for n in durations]
    results["heap_scans"] = [1.0 if n == "b.py::leak" else 0.0 for n in durations]
    results["heap_objects"] = [
        29_000.0 if n == "b.py::leak" and measured_heap else np.nan for n in durations
    ]
    row = run_row(1, wall_s=sum(durations.values()))
    runs = runs_frame([row])
    runs["collected_tests"] = 10.0
    values = (10_000.0, 20_000.0, 30_000.0) if census else (np.nan,) * 3
    for key, value in zip(
        ("heap_objects_start", "heap_objects_collected", "heap_objects_end"), values, strict=True
    ):
        runs[key] = value
    return results, runs


def _profile(results: pd.DataFrame, runs: pd.DataFrame, nodeids: list[str]):  # type: ignore[no-untyped-def]
    per_test = fit_heap_profile(results, runs, pd.Series(1.0, index=results.index))
    return align_heap_profile(per_test, pd.Index(nodeids))


def test_a_job_holding_fewer_objects_pays_less_heap_bound_time() -> None:
    results, runs = history()
    nodeids = list(results["nodeid"])
    profile = _profile(results, runs, nodeids)
    assert profile is not None
    line = profile.line
    assert (line.start, line.per_collected, line.per_test_run) == (10_000, 1_000, 1_000)
    # The whole run as one job: every heap-bound test at the heap it ran at, nothing changes.
    whole = profile.job_deltas(np.zeros(len(nodeids), dtype=np.int64))
    assert whole == pytest.approx(np.zeros(len(nodeids)))
    # b.py alone: 5 collected, 4 ran before leak -> 10k + 5k + 4k = 19k objects, not 29k; gc
    # ran after 3 of b's tests: 18k where the history's line says 20k + 8 x 1k = 28k.
    b_only = np.array([-1 if n.startswith("a.py") else 0 for n in nodeids])
    deltas = dict(zip(nodeids, profile.job_deltas(b_only), strict=True))
    assert deltas["b.py::leak"] == pytest.approx(2.9 * 19 / 29 - 2.9)
    assert deltas["b.py::gc"] == pytest.approx(0.5 * 18 / 28 - 0.5)  # only its gc.collect time
    assert deltas["b.py::t0"] == 0.0
    # Under 2 xdist workers each process ran about half of the tests before it.
    halves = dict(zip(nodeids, profile.job_deltas(b_only, workers=2), strict=True))
    assert halves["b.py::leak"] == pytest.approx(2.9 * 17 / 29 - 2.9)


def test_without_a_census_or_heap_bound_tests_nothing_changes() -> None:
    results, runs = history(census=False)
    assert _profile(results, runs, list(results["nodeid"])) is None
    results, runs = history()
    results["gc_s"] = 0.0
    results["heap_scans"] = 0.0
    assert _profile(results, runs, list(results["nodeid"])) is None
    # No heap scan answer recorded: the test's heap is the run's line at its seq (20k + 9k).
    results, runs = history(measured_heap=False)
    profile = _profile(results, runs, list(results["nodeid"]))
    assert profile is not None
    assert profile.history_objects[list(results["nodeid"]).index("b.py::leak")] == 29_000


def test_split_plans_price_the_heap_of_each_job() -> None:
    """The plan's job holding b.py predicts its tests at b.py's own heap (2 jobs: a | b)."""
    results, runs = history()
    plan = plan_splits(
        results, runs, SplitOptions(jobs=(2, 2), granularity="file", min_gain_frac=0.0)
    )
    assert "heap_objects" not in plan.inputs_missing
    by_member = {job.members: job for job in plan.jobs}
    b_job = by_member[("b.py",)]
    a_job = by_member[("a.py",)]
    leak = 2.9 * 19 / 29
    gc = 1.0 + 0.5 * 18 / 28
    assert b_job.test_s == pytest.approx(3.0 + gc + leak)
    assert a_job.test_s == pytest.approx(5.0)
    # The JUnit-only history of the same tests keeps the history's seconds.
    plain = results.drop(columns=["gc_s", "heap_scans", "heap_objects"])
    plan = plan_splits(plain, runs, SplitOptions(jobs=(2, 2), granularity="file"))
    assert {job.members: job.test_s for job in plan.jobs}[("b.py",)] == pytest.approx(7.4)
