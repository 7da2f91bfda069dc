"""Query parameters shared by every read endpoint (and the dashboard's URLs)."""

from __future__ import annotations

from datetime import date
from typing import Annotated

from fastapi import Depends, HTTPException, Query

from analysis.filters import Filters
from app.labels import split_label
from app.project_reads import window_filters


def parse_label_filters(pairs: list[str]) -> dict[str, tuple[str, ...]]:
    """`os=linux`, `os=macos`, `python=3.11` -> {os: (linux, macos), python: (3.11,)}."""
    found: dict[str, list[str]] = {}
    for pair in pairs:
        try:
            key, value = split_label(pair)
        except ValueError as exc:
            raise HTTPException(status_code=422, detail=f"label filter: {exc}") from None
        found.setdefault(key, []).append(value)
    return {k: tuple(v) for k, v in found.items()}


def query_filters(
    days: Annotated[int | None, Query(ge=1, le=3650, description="window in days")] = 30,
    since: Annotated[date | None, Query(description="first day (overrides days)")] = None,
    until: Annotated[date | None, Query(description="last day (default today)")] = None,
    branch: Annotated[list[str] | None, Query()] = None,
    job: Annotated[list[str] | None, Query()] = None,
    label: Annotated[list[str] | None, Query(description="k=v, repeatable")] = None,
    marker: Annotated[list[str] | None, Query()] = None,
    exclude_marker: Annotated[list[str] | None, Query()] = None,
    file: Annotated[list[str] | None, Query(description="file glob, repeatable")] = None,
) -> Filters:
    """The Filters a request's query string describes."""
    return window_filters(
        days,
        since=since,
        until=until,
        branches=tuple(branch or ()),
        jobs=tuple(job or ()),
        labels=parse_label_filters(label or []),
        markers=tuple(marker or ()),
        exclude_markers=tuple(exclude_marker or ()),
        files=tuple(file or ()),
    )


FiltersDep = Annotated[Filters, Depends(query_filters)]
