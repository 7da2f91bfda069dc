"""Heap-bound test time: the part of a test's time that follows the process's heap
(docs/glossary.md#heap-bound-time).

An explicit `gc.collect()` visits every object the garbage collector tracks, and a
`gc.get_objects()` / `get_referrers()` scan hands them all to Python: such a test costs in
proportion to the heap, and the heap depends on what ran before it in the same process. A
split job collects fewer tests and runs fewer before each one, so it holds fewer objects:
networkx's leak tests took 1.0-1.2 s at 420k objects in the whole run and 0.3 s at 150k in a
job of a quarter of it. The plugin measures per test the seconds in `gc.collect()`, its heap
scans and the heap a scan saw, and per run the tracked objects at collection start, after
collection and after the tests (client/laptime_ci/plugin_heap.py).

The model, per run:
    heap(t) = start + per_collected x collected + per_test_run x tests run before t (per process)
`per_collected` is collection's growth per collected test, `per_test_run` what the tests left
behind, per test. A test's heap in the history is what its scan saw, else this line at its
`seq`. In a job of n tests the line is the job's: n collected, its own tests before t in the
history's order. The heap-bound seconds of a test are its call phase when it scanned the heap
(the scan and the loop over it are the call's bulk), else its seconds in `gc.collect()`; they
scale by heap(job) / heap(history), the rest of the test does not change.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.estimate import result_durations
from model.frames import numeric_column

HEAP_RESULT_COLUMNS = ("gc_s", "heap_scans", "heap_objects")
HEAP_RUN_COLUMNS = ("heap_objects_start", "heap_objects_collected", "heap_objects_end")


@dataclass(frozen=True)
class HeapLine:
    """A run's heap as a line over its tests: objects = start + a x collected + b x ran."""

    start: float
    per_collected: float
    per_test_run: float

    def objects(self, collected: float | np.ndarray, ran: np.ndarray) -> np.ndarray:
        """Tracked objects after collecting `collected` tests and running `ran` of them."""
        return self.start + self.per_collected * np.asarray(collected) + self.per_test_run * ran


@dataclass(frozen=True)
class HeapProfile:
    """Per test (aligned with a plan's estimates): heap-bound seconds, the heap the history
    ran it at, and its place in the history's order; plus the line that prices a job."""

    heap_s: np.ndarray
    history_objects: np.ndarray
    order: np.ndarray
    line: HeapLine

    def job_deltas(self, job_of_test: np.ndarray, workers: int = 1) -> np.ndarray:
        """Per test: seconds its job changes its time by (negative: a smaller heap), given the
        job index of every test (-1: in no job). Tests keep the history's order in a job; under
        xdist each of `workers` processes runs about 1/workers of the tests before it."""
        deltas = np.zeros(len(job_of_test))
        bound = np.flatnonzero((self.heap_s > 0) & (job_of_test >= 0))
        if not len(bound):
            return deltas
        placed = np.flatnonzero(job_of_test >= 0)
        jobs = job_of_test[placed]
        by_job = placed[np.lexsort((self.order[placed], jobs))]
        sorted_jobs = job_of_test[by_job]
        starts = np.searchsorted(sorted_jobs, sorted_jobs, side="left")
        position = np.empty(len(job_of_test))
        position[by_job] = np.arange(len(by_job)) - starts
        sizes = np.bincount(jobs)
        job = job_of_test[bound]
        objects = self.line.objects(sizes[job], position[bound] / max(workers, 1))
        ratio = objects / self.history_objects[bound]
        deltas[bound] = self.heap_s[bound] * (ratio - 1.0)
        return deltas


@dataclass(frozen=True)
class HeapHistory:
    """What the history says about the heap: per nodeid `heap_s` (quiet heap-bound seconds),
    `history_objects` and `order` (medians over runs), and the runs' fitted line."""

    per_test: pd.DataFrame
    line: HeapLine


def _run_lines(runs: pd.DataFrame, tests_per_run: pd.Series) -> pd.DataFrame:
    """Per run id: start, per_collected and per_test_run (NaN where it lacked the census)."""
    start = numeric_column(runs, "heap_objects_start")
    collected_objects = numeric_column(runs, "heap_objects_collected")
    end = numeric_column(runs, "heap_objects_end")
    collected_tests = numeric_column(runs, "collected_tests")
    workers = numeric_column(runs, "xdist_workers").fillna(1.0).clip(lower=1.0)
    ran = runs["run_id"].map(tests_per_run).astype("float64") / workers
    lines = pd.DataFrame(
        {
            "start": start.to_numpy(),
            "per_collected": ((collected_objects - start) / collected_tests)
            .clip(lower=0.0)
            .to_numpy(),
            "per_test_run": ((end - collected_objects) / ran).clip(lower=0.0).to_numpy(),
            "collected": (collected_objects).to_numpy(),
        },
        index=runs["run_id"].to_numpy(),
    )
    return lines[~lines.index.duplicated()]


def fit_heap_profile(
    results: pd.DataFrame, runs: pd.DataFrame, quiet_factor: pd.Series
) -> HeapHistory | None:
    """Per nodeid: `heap_s` (quiet heap-bound seconds), `history_objects`, `order` (medians
    over runs), and the fitted line; None when nothing is heap-bound or
    the runs lack the census (JUnit, older plugins)."""
    scans = numeric_column(results, "heap_scans")
    gc_s = numeric_column(results, "gc_s")
    if not ((scans > 0) | (gc_s > 0)).any():
        return None
    lines = _run_lines(runs, results.groupby("run_id").size())
    known = lines.dropna(subset=["start", "per_collected", "per_test_run"])
    if known.empty:
        return None
    line = HeapLine(
        start=float(known["start"].median()),
        per_collected=float(known["per_collected"].median()),
        per_test_run=float(known["per_test_run"].median()),
    )
    of_run = lines.reindex(results["run_id"].to_numpy())
    seq = numeric_column(results, "seq")
    on_line = of_run["collected"].to_numpy() + of_run["per_test_run"].to_numpy() * seq.to_numpy()
    seen = numeric_column(results, "heap_objects").to_numpy()
    history = np.where(np.isfinite(seen) & (seen > 0), seen, on_line)
    factor = quiet_factor.fillna(1.0).to_numpy()
    # Every phase counted, as the job model's own wall (the phase sum where no total).
    duration = result_durations(results).astype("float64")
    wall = duration.to_numpy()
    call = numeric_column(results, "call_s").fillna(duration).to_numpy()
    heap_s = np.where(scans.to_numpy() > 0, call, gc_s.fillna(0.0).to_numpy()) * factor
    heap_s = np.minimum(np.nan_to_num(heap_s), np.nan_to_num(wall * factor))
    frame = pd.DataFrame(
        {
            "nodeid": results["nodeid"].astype(str).to_numpy(),
            "heap_s": np.where(np.isfinite(history) & (history > 0), heap_s, 0.0),
            "history_objects": history,
            "order": seq.to_numpy(),
        }
    )
    return HeapHistory(frame.groupby("nodeid", sort=False).median(), line)


def align_heap_profile(history: HeapHistory | None, nodeids: pd.Index) -> HeapProfile | None:
    """The profile in the order of a plan's tests (tests without history: not heap-bound)."""
    if history is None:
        return None
    aligned = history.per_test.reindex(nodeids.astype(str))
    heap_s = aligned["heap_s"].fillna(0.0).to_numpy()
    if not (heap_s > 0).any():
        return None
    order = aligned["order"].to_numpy()
    # Tests the history never ordered run last, in the plan's own order.
    fallback = np.nanmax(order) + 1 + np.arange(len(order)) if np.isfinite(order).any() else 0
    return HeapProfile(
        heap_s=heap_s,
        history_objects=aligned["history_objects"].fillna(1.0).to_numpy(),
        order=np.where(np.isfinite(order), order, fallback),
        line=history.line,
    )
