"""Durations as people write and read them: `1h30m` in, "1 h 30 min" out.

The one home of duration text for the API, the CLI, the pages and the figures, so a budget
typed anywhere parses the same and a wait reads the same everywhere.
"""

from __future__ import annotations

import math
import re

from analysis.errors import AnswerError

MISSING = "–"
# Longest duration text accepted (`12h30m15.5s` is 11): longer input is a typo or an attack.
MAX_DURATION_CHARS = 32
# Units a duration may use, largest first, in seconds. `w`/`d` serve retention ages.
UNIT_S = {"w": 604800.0, "d": 86400.0, "h": 3600.0, "m": 60.0, "s": 1.0}
_PART_RE = re.compile(r"(\d+(?:\.\d+)?)([wdhms])")


def parse_duration_s(text: str, *, units: str = "hms", max_s: float | None = None) -> float:
    """Seconds from `300`, `90s`, `5m`, `1h30m`, `1.5h`, `2m30s` (with `units`, e.g. `dwh`
    for ages: `90d`); ValueError when malformed or beyond `max_s`."""
    if len(text) > MAX_DURATION_CHARS:
        raise AnswerError(f"not a duration: longer than {MAX_DURATION_CHARS} characters")
    cleaned = text.strip().lower().replace(" ", "")
    if not cleaned:
        raise AnswerError("empty duration")
    example = "e.g. " + ", ".join(f"5{unit}" for unit in units)
    if re.fullmatch(r"\d+(\.\d+)?", cleaned) and "s" in units:
        seconds = float(cleaned)
    else:
        parts = _PART_RE.findall(cleaned)
        if "".join(num + unit for num, unit in parts) != cleaned or not parts:
            raise AnswerError(f"not a duration: {text!r} (use {example})")
        found = [unit for _, unit in parts]
        order = [unit for unit in UNIT_S if unit in units]
        if any(unit not in units for unit in found) or found != sorted(set(found), key=order.index):
            raise AnswerError(f"not a duration: {text!r} (units {', '.join(order)} in that order)")
        seconds = sum(float(num) * UNIT_S[unit] for num, unit in parts)
    if max_s is not None and seconds > max_s:
        raise AnswerError(f"duration {text!r} is over the limit of {format_duration(max_s)}")
    return seconds


def format_duration(seconds: float | None, *, exact: bool = False) -> str:
    """A duration at the precision that matters at its size ("0.42 s", "4 min 12 s",
    "38 min", "2 h 5 min"); "–" when unknown. `exact` keeps the seconds up to an hour, for
    text that compares a duration with a limit ("11 min 40 s" over a "10 min 50 s" budget)."""
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return MISSING
    sign = "-" if seconds < 0 else ""
    s = abs(float(seconds))
    if s < 0.01 and s > 0:
        return f"{sign}<0.01 s"
    if s < 1:
        return f"{sign}{s:.2f} s"
    if s < 59.95:
        return f"{sign}{s:.1f} s"
    if s < (3599.5 if exact else 600):
        # Under ten minutes the seconds still matter: "4 min 12 s".
        whole = round(s)
        minutes, rest = divmod(whole, 60)
        return f"{sign}{minutes} min {rest} s" if rest else f"{sign}{minutes} min"
    if math.isinf(s):
        return f"{sign}∞"
    minutes = round(s / 60)
    if minutes < 60:
        return f"{sign}{minutes} min"
    hours, rest = divmod(minutes, 60)
    return f"{sign}{hours} h {rest} min" if rest else f"{sign}{hours} h"
