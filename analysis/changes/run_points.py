"""One run's new point in each series it touches: what an upload adds to the detector.

A run of one job cell adds a point to the series of each test that passed in it (its time,
executions averaged), each parametrized function (its passed cases' sum), each file it ran
(the sum of its tests' times, any outcome) and the cell's job wall. Where the run recorded
CPU time, times are taken to a quiet machine with the job model's CPU share
(docs/changes.md), as `series_points` does for a whole history.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from analysis.estimate import result_durations
from analysis.rollups.shares import function_keys
from analysis.split.job_model import quiet_wall, run_cpu_shares

# Series kinds in the order their points are listed; each kind's key is named in KIND_KEYS.
SERIES_KINDS = ("test", "function", "file", "job")
KIND_KEYS: Mapping[str, str] = {
    "test": "test id",
    "function": "function key (nodeid without its parametrize id, as rollups name it)",
    "file": "file path",
    "job": "'' (the cell)",
}
POINT_FRAME_COLUMNS = ("kind", "key", "duration_s")


def run_points(
    results: pd.DataFrame,
    *,
    run: Mapping[str, float | None],
) -> pd.DataFrame:
    """(kind, key, duration_s) rows of one run: a point per touched series, keys as text.

    `results` has test_id, file, outcome, duration_s (and where known setup_s, call_s,
    teardown_s, cpu_s, cpu_wait_s); `run` has wall_s, job_wall_s, cpu_s, xdist_workers."""
    parts = []
    if len(results):
        wall = result_durations(results).astype(float)
        quiet = _quiet(results, wall, run)
        known = quiet.notna() & np.isfinite(quiet)
        passed = known & (results["outcome"] == "passed")
        tests = quiet[passed].groupby(results.loc[passed, "test_id"]).mean()
        parts.append(_frame("test", tests.index.astype(str), tests.to_numpy()))
        if "nodeid" in results.columns:
            parts.append(_functions(results, quiet, passed))
        files = results["file"].where(results["file"].notna(), None)
        in_file = known & files.notna()
        by_file = quiet[in_file].groupby(files[in_file].astype(str)).sum()
        parts.append(_frame("file", by_file.index.astype(str), by_file.to_numpy()))
    job_wall = job_wall_of(run)
    if job_wall is not None:
        parts.append(_frame("job", pd.Index([""]), np.array([job_wall])))
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in POINT_FRAME_COLUMNS})
    return pd.concat(parts, ignore_index=True)


def job_wall_of(run: Mapping[str, float | None]) -> float | None:
    """A run's job wall as the job series takes it: the CI job's wall (`job_wall_s`), else the
    test process's (`wall_s`); None when neither is a positive number."""
    for name in ("job_wall_s", "wall_s"):
        value = run.get(name)
        if value is not None and np.isfinite(value):
            return float(value) if value > 0 else None
    return None


def _functions(results: pd.DataFrame, quiet: pd.Series, passed: pd.Series) -> pd.DataFrame:
    """A point per parametrized function: the sum of its passed cases' times. A step shared
    by many cases, each below its own noise, adds up to one the function's series shows.
    Unparametrized tests are left out: their function series would repeat their test series."""
    params = (
        results["params"]
        if "params" in results.columns
        else pd.Series(None, index=results.index, dtype=object)
    )
    keys = pd.Series(function_keys(results["nodeid"], params), index=results.index)
    cases = passed & (keys != results["nodeid"])
    per_case = quiet[cases].groupby([keys[cases], results.loc[cases, "test_id"]]).mean()
    functions = per_case.groupby(level=0).sum()
    return _frame("function", functions.index.astype(str), functions.to_numpy())


def _quiet(results: pd.DataFrame, wall: pd.Series, run: Mapping[str, float | None]) -> pd.Series:
    """Result times on a quiet machine where the run's CPU share is known; else as measured."""
    if "cpu_s" not in results.columns or results["cpu_s"].isna().all():
        return wall
    frame = results.assign(run_id=0)
    runs = pd.DataFrame(
        {
            "run_id": [0],
            "xdist_workers": [run.get("xdist_workers") or 1],
            "cpu_s": [run.get("cpu_s")],
            "wall_s": [run.get("wall_s")],
        }
    ).astype({"cpu_s": float, "wall_s": float})
    share = float(run_cpu_shares(frame, runs).iloc[0])
    if not np.isfinite(share):
        return wall
    cpu = pd.to_numeric(results["cpu_s"], errors="coerce").astype(float)
    return quiet_wall(wall, cpu, pd.Series(share, index=results.index))


def _frame(kind: str, keys: pd.Index, values: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"kind": kind, "key": keys.to_numpy(dtype=object), "duration_s": values})
