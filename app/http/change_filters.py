"""The filters of a list of changes, read alike by the REST answer and the page."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query

from app.http.params import IsoDate, NodeidText, TextList, given
from app.schemas.changes import ChangeKind, ChangeState
from app.services.changes import ChangeQuery


def change_filters(
    state: ChangeState | None = None,
    since: Annotated[IsoDate, Query(description="first run after the step on or after")] = None,
    kind: ChangeKind | None = None,
    test: Annotated[NodeidText | None, Query(description="a test's nodeid")] = None,
    file: TextList = [],  # noqa: B006 (FastAPI copies defaults; never mutated)
    job: TextList = [],  # noqa: B006
) -> ChangeQuery:
    """Which changes to list; `file` and `job` repeat (any of them), empty ones no filter."""
    return ChangeQuery(
        state=state,
        since=since,
        kind=kind,
        tests=(test,) if test else (),
        files=given(file),
        jobs=given(job),
    )


ChangeFiltersDep = Annotated[ChangeQuery, Depends(change_filters)]
