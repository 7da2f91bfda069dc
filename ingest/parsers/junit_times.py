"""JUnit `time` attributes -> seconds: vectorised for plain numbers, careful for the rest.

`time` (or `duration`): empty/missing is unknown; "1,234.5" and "0,5" are understood;
negative or unparseable values become NaN with a warning. When every time is an integer and
one is above 1e6 s (11.6 days, not a plausible test), the report is in nanoseconds
(container-structure-test): times are divided by 1e9, with a warning. Any time still outside
0 s .. 7 days (inf, 1e308) is unknown, with a warning (ingest.parsers.row_checks).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from ingest.parsers.row_checks import MAX_DURATION_S, durations_in_range

NANOSECOND_THRESHOLD_S = 1e6
_UNKNOWN = ("nan", "inf", "+inf", "-inf", "infinity")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")


def wall_s(raw: str | None) -> float | None:
    """The pytest session's wall time from its <testsuite time>, when it is a number."""
    if raw is None:
        return None
    value = _parse_time(raw)
    return value if np.isfinite(value) and value >= 0 else None


def durations_s(
    raw: list[str | None], warnings: list[str]
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Seconds per testcase: vectorised for plain numbers, a careful parse for the rest."""
    try:
        values = _floats(raw)
    except (ValueError, TypeError):
        values = np.array([_parse_time(s) if s else np.nan for s in raw], dtype=np.float64)
        bad = [
            s
            for s, v in zip(raw, values, strict=True)
            if s and np.isnan(v) and s.strip().lower() not in ("", "nan")
        ]
        if bad:
            warnings.append(
                f"{len(bad)} testcase time(s) are not numbers (first: {bad[0]!r}); "
                "treated as unknown"
            )
    negative = values < 0
    if negative.any():
        warnings.append(f"{int(negative.sum())} testcase time(s) are negative; treated as unknown")
        values[negative] = np.nan
    known = values[np.isfinite(values)]
    if (
        known.size
        and known.max() > NANOSECOND_THRESHOLD_S
        and known.max() / 1e9 <= MAX_DURATION_S  # else not nanoseconds either
        and np.all(known == np.floor(known))
        and all(s.strip().isdigit() for s in raw if s and s.strip().lower() not in _UNKNOWN)
    ):
        warnings.append(
            f"testcase times are integers up to {known.max():.0f}: read as nanoseconds "
            "(container-structure-test writes nanoseconds) and divided by 1e9"
        )
        values = values / 1e9
    return durations_in_range(values, warnings, what="testcase time")


def _floats(raw: list[str | None]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """float() of every string, None (no time) being NaN; each distinct string is parsed
    once, as times repeat (pytest writes milliseconds)."""
    first: dict[str | None, int] = {}
    rows = np.fromiter(map(first.setdefault, raw, range(len(raw))), dtype=np.int64, count=len(raw))
    by_row = np.empty(len(raw), dtype=np.float64)
    by_row[list(first.values())] = [np.nan if s is None else float(s) for s in first]
    return by_row[rows]


def _parse_time(raw: str) -> float:
    """One `time` attribute in seconds: NaN when empty or unreadable, commas understood."""
    s = raw.strip().replace("\u00a0", "").replace(" ", "")
    if not s:
        return float("nan")
    if "," in s:
        # "1,234.5" and "1,234,567" are thousands separators; otherwise a locale decimal
        # comma ("0,012", also "1,234": a single group is read as decimals).
        if "." in s or (s.count(",") > 1 and _THOUSANDS.match(s)):
            s = s.replace(",", "")
        else:
            s = s.replace(",", ".", 1)
    try:
        return float(s)
    except ValueError:
        return float("nan")
