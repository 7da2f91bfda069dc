"""The frames analysis functions take. The database layer and the offline CLI both build them.

results: one row per test result. The parsed-report columns (see RESULT_COLUMNS below) plus
    `run_id` (int), joining it to `runs`.
runs: one row per CI job execution, RUN_COLUMNS.
facts: one row per (test, run cell, day) with additive sums: what daily rollup tables store
    and what every rollup is computed from. Raw results become facts with `runs == 1`, so the
    offline CLI and the server share one code path.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

# One row per test result. Parsers must produce exactly these columns, in this order.
# Unknown values are None/NaN, never a made-up zero.
RESULT_COLUMNS: tuple[str, ...] = (
    "nodeid",  # str: pytest nodeid, or a stable "suite::classname::name" for other dialects
    "file",  # str | None: source file relative to the repo root where known
    "classname",  # str | None
    "function",  # str: test name without the parametrize id
    "params",  # str | None: the bracket id, "p1-p2" for test_y[p1-p2]
    "param_values",  # dict[str, str] | None: argname -> id/repr of the value (plugin only)
    "markers",  # list[str] | None: None = unknown (JUnit), [] = known to have none
    "outcome",  # one of OUTCOMES
    "duration_s",  # float (NaN = unknown): all phases of every attempt together
    "setup_s",  # float (NaN = unknown)
    "call_s",  # float (NaN = unknown)
    "teardown_s",  # float (NaN = unknown)
    "attempts",  # int >= 1: reruns of the same test collapsed into one result
    "last_attempt_s",  # float: the last attempt's own seconds when attempts > 1 (NaN: one
    # attempt, or a report that does not say, like Surefire's rerun children)
    "flaky",  # bool: failed at least once, then passed
    "peak_rss_mib",  # float (NaN = unknown): peak RSS reached while the test ran
    "cpu_s",  # float (NaN = unknown): user+system CPU of the process and its reaped children
    # over the test's window (every attempt), the plugin's only
    "seq",  # float (NaN = unknown): 0-based execution order in its process (per xdist worker)
    # Heap-bound time, the plugin's only; floats so that unknown is NaN:
    "gc_s",  # float: seconds in explicit gc.collect() calls (automatic collections not counted)
    "heap_scans",  # float (integer count): gc.get_objects/get_referrers/get_referents calls
    "heap_objects",  # float (integer count): gc-tracked objects its first get_objects() saw
    # float (NaN = unknown): seconds its thread was runnable but waiting for a CPU (run-queue
    # delay, every attempt like cpu_s), the plugin's only
    "cpu_wait_s",
    "worker",  # str | None: xdist worker id ("gw0")
    "suite",  # str | None: the enclosing <testsuite> name
    "message",  # str | None: failure/skip message, truncated by the parser
)
OUTCOMES: tuple[str, ...] = ("passed", "failed", "error", "skipped")

RUN_COLUMNS: tuple[str, ...] = (
    "run_id",  # int
    "pipeline",  # str | None: groups the jobs of one CI pipeline run
    "job",  # str
    "branch",  # str | None
    "commit",  # str | None
    "machine",  # str | None: machine type / resource class
    "started_at",  # datetime64[ns, UTC] | NaT
    "wall_s",  # float | NaN: the job's wall time including its setup
    "peak_rss_mib",  # float | NaN: the job's peak memory
    "xdist_workers",  # int: 1 when tests ran serially
    "labels",  # dict[str, str]: os, python, cuda...
    "partial",  # bool: a report behind this run hid rows (durations threshold)
    "hidden_rows",  # int: rows a durations report said it hid (0 when none/unknown)
    # What the job model needs, from the plugin's session (NaN/None = unknown):
    "cpu_s",  # float: CPU seconds of the pytest session (process tree)
    "startup_s",  # float: interpreter start to collection start
    "collect_s",  # float: collection wall seconds
    "job_wall_s",  # float: the CI job's wall up to the upload (setup included)
    "collected_tests",  # float (integer count; NaN unknown)
    "collected_files",  # float (integer count; NaN unknown)
    "collect_by_file",  # dict[str, float] | None: file -> seconds collecting it
    "invocation",  # str | None: "paths" or "pyargs"
    "rootdir",  # str | None: the directory the nodeids are relative to
    # gc-tracked objects (float: integer counts, NaN unknown; under xdist the largest worker's)
    "heap_objects_start",  # when collection started
    "heap_objects_collected",  # when collection finished
    "heap_objects_end",  # after the last test
    "cpu_wait_s",  # float: run-queue delay of the tests' thread(s) (under xdist the workers' sum)
    "malloc",  # str | None: one of MALLOC_STATES, the state glibc's malloc ran the tests in
    "platform",  # str | None: Python's platform.platform() where the tests ran
    "exit_s",  # float: session end to process exit, measured by `laptime-ci run`
)
# The RUN_COLUMNS holding text: str, or None when unknown (see text_or_none).
RUN_TEXT_COLUMNS: tuple[str, ...] = ("invocation", "rootdir", "malloc", "platform")
# The state glibc's malloc ran a session's tests in (the plugin's session `malloc`): its mmap and
# trim thresholds fixed by the plugin ("pinned") or the user's environment ("environment"),
# glibc's dynamic defaults ("dynamic": a test's allocation cost depends on what ran before it
# in the process), or not glibc ("other": nothing to pin). docs/laptime-json.md.
MALLOC_STATES: tuple[str, ...] = ("pinned", "environment", "dynamic", "other")
# The RUN_COLUMNS a JUnit-only history lacks, and their unknown values.
RUN_MEASURE_DEFAULTS: dict[str, Any] = {
    "cpu_s": np.nan,
    "startup_s": np.nan,
    "collect_s": np.nan,
    "job_wall_s": np.nan,
    "collected_tests": np.nan,
    "collected_files": np.nan,
    "collect_by_file": None,
    "invocation": None,
    "rootdir": None,
    "heap_objects_start": np.nan,
    "heap_objects_collected": np.nan,
    "heap_objects_end": np.nan,
    "cpu_wait_s": np.nan,
    "malloc": None,
    "platform": None,
    "exit_s": np.nan,
}

FACT_KEY_COLUMNS: tuple[str, ...] = (
    "nodeid",
    "file",
    "classname",
    "function",
    "params",
    "markers",  # tuple[str, ...] | None
    "job",
    "machine",
    "branch",
    "labels_key",  # str: "os=linux,python=3.11" (sorted), "" when none
    "day",  # datetime64[ns] at midnight UTC, NaT when the run has no start time
)

FACT_VALUE_COLUMNS: tuple[str, ...] = (
    "runs",  # int: results counted
    "known",  # int: results with a known duration
    "total_s",  # float: sum of known durations
    "max_s",  # float: largest known duration (NaN when none)
    "setup_s",  # float: sum of known setup times (NaN when none known)
    "call_s",
    "teardown_s",
    "failures",  # int: failed or error outcomes
    "flaky",  # int: flaky results
    "peak_rss_mib",  # float: max peak RSS (NaN when unknown)
)

FACT_COLUMNS = FACT_KEY_COLUMNS + FACT_VALUE_COLUMNS


# labels_key separates pairs with "," and key from value with "=": those two and the escape
# character itself are percent-escaped inside keys and values, so any label set has exactly
# one key and the key parses back to exactly that set (a value may hold "linux,arm64").
_KEY_ESCAPES = str.maketrans({"%": "%25", ",": "%2C", "=": "%3D"})
_KEY_UNESCAPE = re.compile("%(25|2C|3D)")
_KEY_UNESCAPED = {"25": "%", "2C": ",", "3D": "="}


def _unescape(part: str) -> str:
    return _KEY_UNESCAPE.sub(lambda m: _KEY_UNESCAPED[m.group(1)], part)


def label_pair(key: str, value: str) -> str:
    """One `k=v` element of a labels_key, escaped."""
    return f"{key.translate(_KEY_ESCAPES)}={value.translate(_KEY_ESCAPES)}"


def labels_key(labels: dict[str, str] | None) -> str:
    """Canonical text form of a label set, used as a grouping key: "os=linux,python=3.11"
    (sorted; "%", "," and "=" inside keys and values escaped as %25, %2C, %3D)."""
    if not labels:
        return ""
    return ",".join(label_pair(k, str(labels[k])) for k in sorted(labels))


def numeric_column(frame: pd.DataFrame, name: str) -> pd.Series:
    """A numeric column as float64, all NaN when the frame lacks it (older frames, JUnit-only
    data); values that are not numbers are NaN."""
    if name not in frame.columns:
        return pd.Series(np.nan, index=frame.index, dtype="float64")
    return pd.to_numeric(frame[name], errors="coerce").astype("float64")


def unnamed(nodeids: pd.Series) -> pd.Series:
    """True where a result has no test name: a missing or blank nodeid.

    The one rule for readers and the store: such a row can be neither planned nor shown. A
    nodeid ending in `::` is a test: pytest names an item collected with an empty name so
    (Pygments collects its example files that way, `.py` files among them). Parsers whose
    format can lose a name (a JUnit testcase with no name attribute, whose nodeid is then its
    class prefix alone) drop those rows themselves, before they are stored."""
    # One pass in plain Python: Series.map and .str cost more than the test itself here.
    drop = [not (value.strip() if isinstance(value, str) else "") for value in nodeids.tolist()]
    return pd.Series(drop, index=nodeids.index, dtype=bool)


def named_results(results: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """`results` without the rows that have no test name (see `unnamed`), and how many went."""
    drop = unnamed(results["nodeid"])
    if not drop.any():
        return results, 0
    return results[~drop.to_numpy()].reset_index(drop=True), int(drop.sum())


def text_or_none(values: pd.Series) -> pd.Series:
    """A text column as Python objects, None where unknown: pandas builds text with missing
    values as a str dtype holding NaN, which is neither a string nor None."""
    objects = values.astype(object)
    return objects.where(objects.notna(), None)


# Labels that say which planned job a run was, not where it ran: a shard of a cell is
# still that cell, so they never make a cell of their own (they stay on the run).
PLAN_LABELS = frozenset({"plan", "shard"})


def cell_key(labels: object) -> str:
    """The matrix cell of a run's labels: its labels_key without the plan's bookkeeping."""
    if not isinstance(labels, dict):
        return ""
    return labels_key({k: v for k, v in labels.items() if k not in PLAN_LABELS})


def parse_labels_key(key: str) -> dict[str, str]:
    """Inverse of labels_key."""
    if not key:
        return {}
    pairs = (part.partition("=") for part in key.split(","))
    return {_unescape(k): _unescape(v) for k, _, v in pairs}


def label_values(labels_keys: pd.Series, key: str) -> pd.Series:
    """The value of one label key for each row of a labels_key column (None when absent)."""
    uniques = pd.Series(labels_keys.unique())
    mapping = {u: parse_labels_key(u).get(key) for u in uniques}
    return labels_keys.map(mapping)


def empty_runs() -> pd.DataFrame:
    """A runs frame with no rows."""
    return pd.DataFrame({c: pd.Series(dtype=object) for c in RUN_COLUMNS})


def _markers_tuple(value: Any) -> tuple[str, ...] | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    return tuple(sorted(value))


def fact_values(results: pd.DataFrame) -> pd.DataFrame:
    """The additive FACT_VALUE_COLUMNS of each result on its own (runs == 1)."""
    return pd.DataFrame(fact_value_arrays(results), index=results.index)


def fact_value_arrays(results: pd.DataFrame) -> dict[str, np.ndarray]:
    """fact_values as plain arrays, for sums that need no frame (sum_facts_by_code)."""
    duration = results["duration_s"].to_numpy(dtype=float)
    return {
        "runs": np.ones(len(results), dtype=np.int64),
        "known": (~np.isnan(duration)).astype(np.int64),
        "total_s": np.nan_to_num(duration),
        "max_s": duration,
        "setup_s": results["setup_s"].to_numpy(dtype=float),
        "call_s": results["call_s"].to_numpy(dtype=float),
        "teardown_s": results["teardown_s"].to_numpy(dtype=float),
        "failures": results["outcome"].isin(("failed", "error")).to_numpy().astype(np.int64),
        "flaky": results["flaky"].to_numpy().astype(np.int64),
        "peak_rss_mib": results["peak_rss_mib"].to_numpy(dtype=float),
    }


def sum_fact_values(values: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Add fact values up per group of `by` (groups in the order of their first row, a missing
    key a group of its own); a phase no row reported stays unknown, not zero."""
    codes: np.ndarray
    if len(by) == 1:
        # One key: a hash factorize, without the groupby machinery (one run's files per upload).
        codes, uniques = pd.factorize(values[by[0]], use_na_sentinel=False)
        keys: dict[str, Any] = {by[0]: uniques}
    else:
        grouped = values.groupby(by, dropna=False, sort=False)
        codes = grouped.ngroup().to_numpy()
        index = grouped.size().index
        keys = {name: index.get_level_values(name) for name in by}
    sums = sum_facts_by_code(values, codes.astype(np.intp, copy=False), len(keys[by[0]]))
    return pd.DataFrame({**keys, **sums})


def sum_facts_by_code(
    values: pd.DataFrame | dict[str, np.ndarray], codes: np.ndarray, groups: int
) -> dict[str, np.ndarray]:
    """Each FACT_VALUE_COLUMNS column summed (or maxed) over the rows of each group code
    (0 .. groups - 1); a phase no row of a group reported stays NaN."""

    def total(column: str) -> np.ndarray:
        # NaN adds nothing, as pandas' sum skips it.
        column_values = np.nan_to_num(np.asarray(values[column], dtype=np.float64))
        summed: np.ndarray = np.bincount(codes, weights=column_values, minlength=groups)
        return summed

    def count(column: str) -> np.ndarray:
        counted: np.ndarray = np.rint(total(column)).astype(np.int64)
        return counted

    def maximum(column: str) -> np.ndarray:
        # fmax skips NaN: a group whose rows all lack the value keeps the NaN it starts with.
        out = np.full(groups, np.nan)
        np.fmax.at(out, codes, np.asarray(values[column], dtype=np.float64))
        return out

    def phase(column: str) -> np.ndarray:
        reported = ~np.isnan(np.asarray(values[column], dtype=np.float64))
        known = np.bincount(codes, weights=reported, minlength=groups)
        return np.where(known > 0, total(column), np.nan)

    return {
        "runs": count("runs"),
        "known": count("known"),
        "total_s": total("total_s"),
        "max_s": maximum("max_s"),
        "setup_s": phase("setup_s"),
        "call_s": phase("call_s"),
        "teardown_s": phase("teardown_s"),
        "failures": count("failures"),
        "flaky": count("flaky"),
        "peak_rss_mib": maximum("peak_rss_mib"),
    }


def facts_from_results(results: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Aggregate raw results (joined to their runs) into the additive facts frame."""
    run_cols = runs[["run_id", "job", "machine", "branch", "labels", "started_at"]].copy()
    run_cols["labels_key"] = run_cols["labels"].map(labels_key)
    started = pd.to_datetime(run_cols["started_at"], utc=True, errors="coerce")
    run_cols["day"] = started.dt.tz_convert(None).dt.normalize()
    frame = results.merge(run_cols.drop(columns=["labels", "started_at"]), on="run_id")
    frame["markers"] = frame["markers"].map(_markers_tuple)
    keys = frame[list(FACT_KEY_COLUMNS)].copy()
    # groupby drops None keys unless told not to; markers=None must survive as "unknown".
    keys["markers"] = keys["markers"].map(lambda m: m if m is not None else ("\0unknown",))
    facts = sum_fact_values(pd.concat([keys, fact_values(frame)], axis=1), list(FACT_KEY_COLUMNS))
    facts["markers"] = facts["markers"].map(lambda m: None if m == ("\0unknown",) else m)
    return facts[list(FACT_COLUMNS)]
