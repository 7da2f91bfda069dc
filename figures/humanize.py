"""Numbers as people read them: "38 min", "2 h 5 min", "1.2 s", "34.4%".

Pure (stdlib and analysis.durations) so the figure builders and the page templates share
one spelling.
"""

from __future__ import annotations

import math

# Durations have one spelling everywhere (CLI, API reasons, pages): it lives in analysis.
from analysis.durations import MISSING
from analysis.durations import format_duration as duration_text

__all__ = [
    "MISSING",
    "count_text",
    "duration_text",
    "memory_text",
    "money_text",
    "percent_text",
    "time_scale",
]


def _missing(value: float | None) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def percent_text(fraction: float | None, digits: int = 1) -> str:
    """A fraction as a percentage: 0.3436 -> "34.4%"."""
    if _missing(fraction):
        return MISSING
    assert fraction is not None
    return f"{fraction * 100:.{digits}f}%"


def count_text(n: float | None) -> str:
    """An integer count with thousands separators: 12345 -> "12,345"."""
    if _missing(n):
        return MISSING
    assert n is not None
    return f"{round(n):,}"


def memory_text(mib: float | None) -> str:
    """Memory in MiB or GiB: 512 -> "512 MiB", 3072 -> "3.0 GiB"."""
    if _missing(mib):
        return MISSING
    assert mib is not None
    return f"{mib / 1024:.1f} GiB" if mib >= 1024 else f"{mib:.0f} MiB"


def money_text(amount: float | None, unit: str = "USD") -> str:
    """A price: "$12.40" for USD, "12.4 credits" otherwise."""
    if _missing(amount):
        return MISSING
    assert amount is not None
    if unit.upper() == "USD":
        return f"${amount:,.2f}"
    return f"{amount:,.1f} {unit}"


def time_scale(max_s: float) -> tuple[float, str]:
    """(divisor, unit) for an axis whose largest value is `max_s` seconds."""
    if not math.isfinite(max_s) or max_s < 120:
        return 1.0, "s"
    if max_s < 3 * 3600:
        return 60.0, "min"
    return 3600.0, "h"
