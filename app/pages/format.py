"""Human formatting for the pages: "38 min", "2 h 5 min", "1.2 s", "34.4%", "3 h ago".

The number spellings live in `figures.humanize` so figures and tables agree; this module
adds the page-only ones (timestamps) and registers them all as Jinja filters.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from jinja2 import Environment, Undefined
from markupsafe import Markup

from figures.humanize import (
    MISSING,
    count_text,
    duration_text,
    memory_text,
    money_text,
    percent_text,
)
from model.frames import parse_labels_key

__all__ = [
    "ago_text",
    "count_text",
    "duration_text",
    "labels_text",
    "machine_text",
    "memory_text",
    "money_text",
    "percent_text",
    "register_filters",
    "timestamp_text",
]


def _as_datetime(value: Any) -> datetime | None:
    # NaT (pandas' missing timestamp) is a datetime that is not equal to itself.
    if value is None or value != value:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            return None
    if hasattr(value, "to_pydatetime"):
        try:
            value = value.to_pydatetime()
        except ValueError:  # NaT
            return None
    if not isinstance(value, datetime):
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def timestamp_text(value: Any) -> str:
    """A timestamp as "2026-12-02 19:44 UTC"; "–" when unknown."""
    moment = _as_datetime(value)
    if moment is None:
        return MISSING
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def ago_text(value: Any, *, now: datetime | None = None) -> str:
    """How long ago a timestamp was: "just now", "5 min ago", "3 h ago", "2 days ago"."""
    moment = _as_datetime(value)
    if moment is None:
        return MISSING
    seconds = ((now or datetime.now(UTC)) - moment).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    return f"{days} day ago" if days == 1 else f"{days} days ago"


def labels_text(key: Any) -> str:
    """A labels key as people read it: "os=linux, platform=linux,arm64"; "(no labels)"."""
    labels = parse_labels_key(str(key or ""))
    return ", ".join(f"{k}={v}" for k, v in labels.items()) if labels else "(no labels)"


UNKNOWN_MACHINE = "unknown"


def machine_text(value: Any) -> str:
    """A job's machine type; "unknown" when the upload named none (None, NaN or empty)."""
    if value is None or (isinstance(value, float) and value != value) or value == "":
        return UNKNOWN_MACHINE
    return str(value)


def _known(formatter: Callable[..., str]) -> Callable[..., str]:
    """The formatter with a missing template value (a dict key a result left out) as None."""

    def apply(value: Any, *args: Any) -> str:
        return formatter(None if isinstance(value, Undefined) else value, *args)

    return apply


# Characters kept whole at the end of a long name in a table cell.
NAME_TAIL_CHARS = 18


def name_html(value: Any) -> Markup:
    """A name for a table cell: one line, cut with an ellipsis by the style sheet (a column of
    300-character paths otherwise squeezed its neighbours or wrapped every few characters),
    the full name in the title and in the text (copy and tests read it whole)."""
    missing = value is None or isinstance(value, Undefined) or value != value  # NaN
    text = "–" if missing else str(value)
    if len(text) <= NAME_TAIL_CHARS * 2:
        return Markup('<span class="name" title="{0}">{0}</span>').format(text)
    # The end of a name tells its siblings apart (test_mod_00012.py, ...Tests3): the cut
    # falls in the middle, the tail stays.
    head, tail = text[:-NAME_TAIL_CHARS], text[-NAME_TAIL_CHARS:]
    return Markup(
        '<span class="name" title="{0}"><span class="head">{1}</span>'
        '<span class="tail">{2}</span></span>'
    ).format(text, head, tail)


def register_filters(env: Environment) -> None:
    """Make every formatter available in templates: `{{ x | duration }}`."""
    formatters: dict[str, Callable[..., str]] = {
        "duration": duration_text,
        "percent": percent_text,
        "count": count_text,
        "memory": memory_text,
        "money": money_text,
        "timestamp": timestamp_text,
        "ago": ago_text,
        "labels": labels_text,
        "machine": machine_text,
    }
    env.filters.update({name: _known(f) for name, f in formatters.items()})
    env.filters["name"] = name_html
