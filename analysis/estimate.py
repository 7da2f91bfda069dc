"""Per-test duration estimates from history: what the split planner and the sharder weigh.

A test's estimate is the median of its most recent results (all phases counted: setup, call
and teardown), which shrugs off one slow outlier. A test with no usable history is flagged and
estimated from its file (the median estimate of the file's known tests), else from the project
median, so a new test is placed by a guess instead of being dropped or counted as free.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.errors import AnswerError
from model.frames import named_results

DEFAULT_WINDOW_RUNS = 20
# Columns of an estimates frame (index: nodeid).
ESTIMATE_COLUMNS: tuple[str, ...] = ("file", "classname", "duration_s", "samples", "source")
SOURCES: tuple[str, ...] = ("history", "file", "project", "default")
# With no history at all there is nothing to be relative to; any positive constant gives
# an even split by count, which is the honest best guess.
DEFAULT_ESTIMATE_S = 1.0


def result_durations(results: pd.DataFrame) -> pd.Series:
    """Each result's time with every phase counted; the phase sum where the total is missing."""
    phases = results[["setup_s", "call_s", "teardown_s"]]
    phase_sum = phases.sum(axis=1, min_count=1)
    return results["duration_s"].fillna(phase_sum)


def file_of(nodeids: pd.Series) -> pd.Series:
    """The file part of pytest nodeids (`a/test_x.py::T::t` -> `a/test_x.py`)."""
    return nodeids.astype(str).str.split("::", n=1).str[0]


def estimate_durations(
    results: pd.DataFrame, runs: pd.DataFrame, *, window_runs: int = DEFAULT_WINDOW_RUNS
) -> pd.DataFrame:
    """One row per test seen: median duration over its last `window_runs` results, flagged."""
    if window_runs < 1:
        raise AnswerError("window_runs must be at least 1")
    # Keyed by nodeid: a row without one (a nameless testcase) has no test to estimate, and
    # left in it would be a group of its own beside the names (frames of different lengths).
    results, _ = named_results(results)
    # Integer codes: grouping 100k strings several times is what would cost here.
    codes, names = pd.factorize(results["nodeid"].astype(str).to_numpy(), sort=True)
    frame = pd.DataFrame(
        {
            "test": codes,
            "duration_s": result_durations(results).to_numpy(),
            "run_id": results["run_id"].to_numpy(),
        }
    )
    order = runs[["run_id", "started_at"]].drop_duplicates("run_id").copy()
    order["started_at"] = pd.to_datetime(order["started_at"], utc=True, errors="coerce")
    frame = frame.merge(order, on="run_id", how="left")
    frame["row"] = np.arange(len(frame))
    frame = frame.sort_values(["started_at", "run_id", "row"], kind="stable", na_position="first")
    known = frame[frame["duration_s"].notna()]
    recent = known[known.groupby("test").cumcount(ascending=False) < window_runs]
    stats = recent.groupby("test")["duration_s"].agg(["median", "count"])
    last_row = frame.groupby("test")["row"].max().sort_index()
    tests = pd.DataFrame(
        {
            "file": results["file"].to_numpy()[last_row.to_numpy()],
            "classname": results["classname"].to_numpy()[last_row.to_numpy()],
        },
        index=pd.Index(np.asarray(names, dtype=object), name="nodeid"),
    )
    no_file = tests["file"].isna()
    if no_file.any():
        tests.loc[no_file, "file"] = file_of(tests.index[no_file].to_series())
    tests["duration_s"] = stats["median"].reindex(range(len(names))).to_numpy()
    tests["samples"] = (
        stats["count"].reindex(range(len(names))).fillna(0).astype("int64").to_numpy()
    )
    tests["source"] = tests["duration_s"].notna().map({True: "history", False: None})
    return _fill_missing(tests)[list(ESTIMATE_COLUMNS)]


def estimate_new_tests(known: pd.Series, nodeids: Sequence[str]) -> pd.DataFrame:
    """Estimates for `nodeids` from a nodeid->seconds series; tests absent from it are guessed."""
    ids = pd.Index(pd.unique(pd.Series(list(nodeids), dtype=object)).astype(str), name="nodeid")
    pool = pd.DataFrame({"duration_s": pd.to_numeric(known, errors="coerce")})
    pool.index = pool.index.astype(str)
    pool = pool[pool["duration_s"].notna()]
    frame = pd.DataFrame(index=pd.Index(sorted(set(ids) | set(pool.index)), name="nodeid"))
    frame["file"] = file_of(frame.index.to_series())
    frame["classname"] = None
    frame["duration_s"] = pool["duration_s"].reindex(frame.index)
    frame["samples"] = frame["duration_s"].notna().astype("int64")
    frame["source"] = frame["duration_s"].notna().map({True: "history", False: None})
    frame = _fill_missing(frame)
    return frame.loc[ids, list(ESTIMATE_COLUMNS)]


def _fill_missing(tests: pd.DataFrame) -> pd.DataFrame:
    """Fill tests without history from their file's median, then the project median."""
    tests = tests.copy()
    missing = tests["duration_s"].isna()
    if not missing.any():
        return tests
    history = tests.loc[~missing]
    by_file = history.groupby("file")["duration_s"].median()
    from_file = tests.loc[missing, "file"].map(by_file)
    tests.loc[missing, "duration_s"] = from_file
    tests.loc[missing & tests["duration_s"].notna(), "source"] = "file"
    still = tests["duration_s"].isna()
    if len(history):
        tests.loc[still, "duration_s"] = float(history["duration_s"].median())
        tests.loc[still, "source"] = "project"
    else:
        tests.loc[still, "duration_s"] = DEFAULT_ESTIMATE_S
        tests.loc[still, "source"] = "default"
    tests["duration_s"] = tests["duration_s"].astype("float64")
    return tests
