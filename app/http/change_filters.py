"""The filters of a list of changes, read alike by the REST answer and the page."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from app.http.params import EmptyIsNone, IsoDate, MinSize, NodeidText, TextList, given
from app.schemas.changes import ChangeKind, ChangeState
from app.services.changes import ChangeQuery


def change_filters(
    state: Annotated[ChangeState | None, EmptyIsNone] = None,
    since: Annotated[IsoDate, Query(description="first run after the step on or after")] = None,
    kind: Annotated[ChangeKind | None, EmptyIsNone] = None,
    test: Annotated[NodeidText | None, Query(description="a test's nodeid")] = None,
    file: TextList = [],  # noqa: B006 (FastAPI copies defaults; never mutated)
    job: TextList = [],  # noqa: B006
    min_delta_s: Annotated[MinSize, Query(description="at least this many seconds per run")] = None,
    min_relative: Annotated[
        MinSize, Query(description="at least this share of the time before (0.2: 20%)")
    ] = None,
) -> ChangeQuery:
    """Which changes to list; `file` and `job` repeat (any of them), empty ones no filter;
    the two sizes count a step either way (slower or faster)."""
    return ChangeQuery(
        state=state,
        since=since,
        kind=kind,
        tests=(test,) if test else (),
        files=given(file),
        jobs=given(job),
        min_delta_s=min_delta_s,
        min_relative=min_relative,
    )


ChangeFiltersDep = Annotated[ChangeQuery, Depends(change_filters)]
