"""Checks every parser applies to its rows: a result needs a test name, a time a sane range.

One odd row must never reach the tables: pytest writes `<testcase time="0.001"/>` with no
classname and no name when SIGINT stops a run, and `time="inf"` or `"1e308"` would make every
sum of its project infinite. A nameless row is left out, an out-of-range time is unknown, and
each says so in one warning that names the rows (the first few), whatever the format.
A nodeid ending in `::` names a real test where pytest wrote the nodeid (the plugin's JSON,
`--durations`): an item collected with an empty name. Only a JUnit testcase with no name
attribute, whose nodeid is then its class prefix alone, is nameless that way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from model.frames import unnamed
from pgcodec.text_values import joined_text

__all__ = ["MAX_DURATION_S", "durations_in_range", "keep_named", "nameless"]

# A test longer than a week is not a measurement: CI jobs time out in hours.
MAX_DURATION_S = 7 * 24 * 3600.0
# How many odd rows a warning names before "...".
_NAMED = 5

_FloatArray = np.ndarray[Any, np.dtype[np.float64]]
_BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


_PREFIX_END = re.compile(r"::\s*\n")


def nameless(nodeids: Sequence[Any], *, prefix_only: bool = False) -> _BoolArray:
    """Rows with no test name (model.frames.unnamed: the one rule readers apply too);
    `prefix_only`: also nodeids that are a class prefix alone (ending in `::`)."""
    drop = unnamed(pd.Series(list(nodeids), dtype=object)).to_numpy(dtype=bool, copy=True)
    # One regex over the joined names rules out the row-by-row pass when no name ends in "::"
    # (a name holding a newline may match falsely; the exact pass then decides).
    if prefix_only and _PREFIX_END.search(joined_text(nodeids, "\n") + "\n"):
        drop |= np.fromiter(
            (isinstance(v, str) and v.rstrip().endswith("::") for v in nodeids),
            dtype=bool,
            count=len(nodeids),
        )
    return drop


def keep_named(
    columns: dict[str, Any],
    where: Callable[[int], str],
    warnings: list[str],
    *,
    prefix_only: bool = False,
) -> dict[str, Any]:
    """`columns` (equal-length arrays or lists, one `nodeid`) without their nameless rows
    (`prefix_only`: see `nameless`); `where(i)` says where row i was in the report."""
    drop = nameless(columns["nodeid"], prefix_only=prefix_only)
    if not drop.any():
        return columns
    rows = np.flatnonzero(drop)
    named = ", ".join(where(int(row)) for row in rows[:_NAMED])
    more = f" and {len(rows) - _NAMED} more" if len(rows) > _NAMED else ""
    warnings.append(
        f"{len(rows)} result(s) with no test name left out ({named}{more}): pytest writes "
        "such a testcase when a run is interrupted (SIGINT, a CI timeout)"
    )
    keep = ~drop
    return {key: _take(values, keep) for key, values in columns.items()}


def durations_in_range(values: _FloatArray, warnings: list[str], *, what: str) -> _FloatArray:
    """`values` (seconds) with anything negative, infinite or above MAX_DURATION_S made
    unknown (NaN), with one warning naming the first such value; NaN stays NaN."""
    values = np.asarray(values, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(values) & ((values < 0) | (values > MAX_DURATION_S) | np.isinf(values))
    if not bad.any():
        return values
    first = values[bad][:_NAMED]
    shown = ", ".join(f"{v:g} s" for v in first)
    more = " ..." if int(bad.sum()) > _NAMED else ""
    warnings.append(
        f"{what}: {int(bad.sum())} value(s) outside 0 s .. 7 days ({shown}{more}); "
        "treated as unknown"
    )
    out = values.copy()
    out[bad] = np.nan
    return out


def _take(values: Any, keep: _BoolArray) -> Any:
    if isinstance(values, np.ndarray):
        return values[keep]
    return [value for value, kept in zip(values, keep, strict=True) if kept]
