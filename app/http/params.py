"""Query parameters shared by every read endpoint (and the dashboard's URLs), with their bounds.

Every parameter is checked here, before any work: text without NUL bytes (Postgres cannot
store them) and of bounded length, dates within the years a CI run can have, and a 422 that
names the parameter (FastAPI's detail list, `loc: ["query", name]`) for anything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from typing import Annotated

import anyio.from_thread
from fastapi import Depends, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import AfterValidator, BeforeValidator, Field, StringConstraints

from analysis.durations import MAX_DURATION_CHARS
from analysis.filters import Filters
from analysis.split.options import parse_job_range, parse_plan_duration_s
from app.http.text_bounds import FIELD_MAX_CHARS
from app.services.project_reads import window_filters
from laptime_ci.labels import split_label

# Longest value of one text parameter (a cell key, a catalogue name...).
MAX_TEXT_CHARS = 1000
# Longest value of a repeatable filter (a branch, a job, a marker, a file glob): more than any
# stored branch or job (FIELD_MAX_CHARS of the upload form) or a real path; a label filter
# `key=value` is as long as a stored label can be.
MAX_FILTER_CHARS = 300
MAX_LABEL_CHARS = FIELD_MAX_CHARS["label key"] + 1 + FIELD_MAX_CHARS["label value"]
# Most values of one repeatable filter (`?job=a&job=b...`). With the lengths above, every
# parameter of a read at its bound (4-byte characters, percent-encoded) fits the request
# target the server reads (MAX_TARGET_BYTES); tests/server/test_schema_agrees.py checks it.
MAX_VALUES = 32
# Dates a filter may name: before 1970 or past 2999 no CI run exists, and date arithmetic on
# the window (`until - days`) must not leave Python's date range (year 1..9999).
DATE_MIN = date(1970, 1, 1)
# Row ids are PostgreSQL bigints: a larger number names no row, and casting it would fail.
ROW_ID_MAX = 2**63 - 1
DATE_MAX = date(2999, 12, 31)

# Text without NUL bytes: the pattern is in the OpenAPI schema, so clients (and schemathesis)
# see the rule; pydantic enforces it before the route runs.
Text = Annotated[str, StringConstraints(max_length=MAX_TEXT_CHARS, pattern=r"^[^\x00]*$")]
# A test's nodeid as a parameter: stored names are cut at 2000 bytes (docs/errors.md), so
# 4096 characters hold any of them.
MAX_NODEID_CHARS = 4096
NodeidText = Annotated[Text, StringConstraints(max_length=MAX_NODEID_CHARS)]
DurationText = Annotated[
    str, StringConstraints(max_length=MAX_DURATION_CHARS, pattern=r"^[0-9hmsHMS. ]*$")
]
JobRangeText = Annotated[str, StringConstraints(max_length=15, pattern=r"^[0-9 -]+$")]
# A repeatable filter: an empty value (`?label=`, what a form's "all" option sends) is no
# filter, here as on the pages (app/pages/common.py drops them); the schema allows it too.
FilterText = Annotated[Text, StringConstraints(max_length=MAX_FILTER_CHARS)]
TextList = Annotated[list[FilterText], Query(max_length=MAX_VALUES)]


def none_if_empty(value: str | None) -> str | None:
    """An empty optional parameter is one not given (its default), like an empty filter."""
    return value or None


MaybeText = Annotated[Text | None, AfterValidator(none_if_empty)]


def empty_as_none(value: object) -> object:
    """An empty number field of a form (`?min=`) is one not given."""
    return None if value == "" else value


# An optional parameter a form's "any" option (or an empty field) sends empty.
EmptyIsNone = BeforeValidator(empty_as_none)
# A size a list is filtered by: at least 0, finite; empty is none.
MinSize = Annotated[Annotated[float, Field(ge=0, le=1e9, allow_inf_nan=False)] | None, EmptyIsNone]


def iso_date(value: object) -> object:
    """Only `YYYY-MM-DD` is a date on the wire (pydantic would also take `0` or a timestamp)."""
    if isinstance(value, str) and not _ISO_DATE.fullmatch(value):
        raise ValueError("must be a date like 2026-12-04")
    return value


_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
IsoDate = Annotated[date | None, BeforeValidator(iso_date)]
# `key=value` (a non-empty key, split on the first `=`: laptime_ci.labels), or empty.
LabelText = Annotated[
    Text,
    StringConstraints(max_length=MAX_LABEL_CHARS, pattern=r"^(?:[^=\x00][^\x00]*=[^\x00]*)?$"),
]


def invalid(name: str, message: str, value: object = None) -> RequestValidationError:
    """A 422 naming query parameter `name`, shaped like FastAPI's own validation errors."""
    return RequestValidationError(
        [{"type": "value_error", "loc": ("query", name), "msg": message, "input": value}]
    )


def job_range(name: str, raw: str) -> tuple[int, int]:
    """`N` or `N-M` job counts (at most MAX_JOBS) from query parameter `name`; 422 otherwise."""
    try:
        return parse_job_range(raw)
    except ValueError as exc:
        raise invalid(name, str(exc), raw) from exc


def duration_s(name: str, raw: str | None) -> float | None:
    """A per-job duration (`5m`, `1h30m`) from query parameter `name`; 422 when malformed."""
    try:
        return parse_plan_duration_s(raw)
    except ValueError as exc:
        raise invalid(name, str(exc), raw) from exc


def _check_date(name: str, value: date | None) -> None:
    if value is not None and not DATE_MIN <= value <= DATE_MAX:
        raise invalid(name, f"must be between {DATE_MIN} and {DATE_MAX}", value.isoformat())


def given(values: list[str]) -> tuple[str, ...]:
    """The values of a repeatable filter that filter: empty ones mean no filter."""
    return tuple(v for v in values if v)


def parse_label_filters(pairs: list[str]) -> dict[str, tuple[str, ...]]:
    """`os=linux`, `os=macos`, `python=3.11` -> {os: (linux, macos), python: (3.11,)}."""
    found: dict[str, list[str]] = {}
    for pair in given(pairs):
        try:
            key, value = split_label(pair)
        except ValueError as exc:
            raise invalid("label", str(exc), pair) from None
        found.setdefault(key, []).append(value)
    return {k: tuple(v) for k, v in found.items()}


def query_filters(
    days: Annotated[int | None, Query(ge=1, le=3650, description="window in days")] = 30,
    since: Annotated[
        IsoDate, Query(description=f"first day (overrides days), {DATE_MIN} to {DATE_MAX}")
    ] = None,
    until: Annotated[
        IsoDate, Query(description=f"last day (default today), {DATE_MIN} to {DATE_MAX}")
    ] = None,
    branch: TextList = [],  # noqa: B006 (FastAPI copies defaults; never mutated)
    job: TextList = [],  # noqa: B006
    label: Annotated[
        list[LabelText], Query(max_length=MAX_VALUES, description="k=v, repeatable")
    ] = [],  # noqa: B006
    marker: TextList = [],  # noqa: B006
    exclude_marker: TextList = [],  # noqa: B006
    file: Annotated[
        list[FilterText], Query(max_length=MAX_VALUES, description="file glob, repeatable")
    ] = [],  # noqa: B006
) -> Filters:
    """The Filters a request's query string describes."""
    _check_date("since", since)
    _check_date("until", until)
    return window_filters(
        days,
        since=since,
        until=until,
        branches=given(branch),
        jobs=given(job),
        labels=parse_label_filters(label),
        markers=given(marker),
        exclude_markers=given(exclude_marker),
        files=given(file),
    )


FiltersDep = Annotated[Filters, Depends(query_filters)]


async def client_gone_probe(request: Request) -> Callable[[], bool]:
    """Dependency: a check, callable from a sync route's worker thread, that says whether the
    client has disconnected (so long work can stop instead of computing for no one)."""

    def gone() -> bool:
        try:
            return bool(anyio.from_thread.run(request.is_disconnected))
        except RuntimeError:
            # Not in an anyio worker thread (a direct call in a test): nobody to ask.
            return False

    return gone


ClientGoneDep = Annotated[Callable[[], bool], Depends(client_gone_probe)]

__all__ = [
    "ClientGoneDep",
    "DurationText",
    "FiltersDep",
    "JobRangeText",
    "MaybeText",
    "Text",
    "duration_s",
    "invalid",
    "job_range",
    "query_filters",
]
