"""Executions, not names: which repeated testcases of one report are reruns (pytest) and
which are distinct executions that happen to share a name (every other tool).

- A pytest nodeid is unique within a session, so a pytest testcase repeated in one report
  can only be another attempt (pytest-rerunfailures >= 16.6.1 and `flaky` write one
  `<testcase>` per attempt): the attempts merge into one result whose duration is the SUM of
  theirs (the machine paid for all of them), with the last attempt's outcome and message,
  `attempts` the count and `flaky` when an earlier attempt failed and the last passed.
- Any other repeated name (Mocha's `it` titles in different contexts, NUnit theory cases,
  xUnit, nameless testcases) is its own execution. Its nodeid gets " #k", k = 2, 3... its
  place among the testcases of that nodeid in document order; the first keeps its nodeid.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

# Appended to the nodeid of the k-th (k >= 2) execution sharing a nodeid in one report.
EXECUTION_SUFFIX = " #{k}"
_MAX_SUFFIX_PASSES = 4


def number_executions(nodeids: np.ndarray[Any, Any], mergeable: np.ndarray[Any, Any]) -> int:
    """Give repeated non-mergeable nodeids their " #k" suffix in place; returns how many."""
    renamed = 0
    for _ in range(_MAX_SUFFIX_PASSES):
        rows = np.flatnonzero(~mergeable)
        ids = pd.Series(nodeids[rows], dtype=object)
        occurrence = ids.groupby(ids, sort=False).cumcount().to_numpy()
        repeated = occurrence > 0
        if not repeated.any():
            return renamed
        renamed += int(repeated.sum())
        # A suffixed id may meet a real name ("t #2" written by the tool): another pass.
        nodeids[rows[repeated]] = [
            f"{nodeid}{EXECUTION_SUFFIX.format(k=k + 1)}"
            for nodeid, k in zip(ids[repeated], occurrence[repeated].tolist(), strict=True)
        ]
    raise AssertionError("execution numbering did not converge")  # pragma: no cover


def merge_reruns(columns: dict[str, Any], *, flaky_marks: np.ndarray[Any, Any]) -> dict[str, Any]:
    """One row per nodeid: the last attempt, durations and attempts summed, flaky if it
    failed then passed. Rows are kept in first-appearance order."""
    codes, _uniques = pd.factorize(columns["nodeid"])
    n = len(codes)
    k = int(codes.max()) + 1
    # factorize numbers codes by first appearance, so code order is first-appearance order;
    # unique over the reversed codes finds each code's last occurrence.
    _, first_reversed = np.unique(codes[::-1], return_index=True)
    last = n - 1 - first_reversed
    outcomes = columns["outcome"]
    failed = (outcomes == "failed") | (outcomes == "error") | flaky_marks
    failures = np.bincount(codes, weights=failed.astype(np.float64), minlength=k)
    attempts = np.bincount(codes, weights=columns["attempts"].astype(np.float64), minlength=k)
    durations = columns["duration_s"]
    known = ~np.isnan(durations)
    total = np.bincount(codes, weights=np.where(known, durations, 0.0), minlength=k)
    any_known = np.bincount(codes, weights=known.astype(np.float64), minlength=k) > 0
    collapsed = {name: values[last] for name, values in columns.items()}
    earlier_failures = failures - failed[last]
    collapsed["attempts"] = attempts.astype(np.int64)
    collapsed["duration_s"] = np.where(any_known, total, np.nan)
    # The sum is what the machine paid; the last attempt's own time is kept beside it.
    collapsed["last_attempt_s"] = np.where(attempts > 1, durations[last], np.nan)
    collapsed["flaky"] = ((collapsed["outcome"] == "passed") & (earlier_failures > 0)) | columns[
        "flaky"
    ][last]
    return collapsed
