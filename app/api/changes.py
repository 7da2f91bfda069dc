"""The changes endpoints: what got slower (or faster) on the default branch, since which commit."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query

from app.http.deps import AdminProject, ConnDep, ReadProject
from app.http.responses import PROJECT_ERRORS, answers
from app.schemas.changes import ChangeList, ChangeState, ChangeStateRequest, ChangeStateSet
from app.services.changes import ChangeQuery, change_list, set_state

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["changes"])


@router.get("/changes", **answers(ChangeList, *PROJECT_ERRORS))
def read_changes(
    project: ReadProject,
    conn: ConnDep,
    state: ChangeState | None = None,
    since: Annotated[date | None, Query(description="first run after the step on or after")] = None,
    kind: Literal["test", "file", "job"] | None = None,
    test: Annotated[str | None, Query(min_length=1, max_length=2000, description="nodeid")] = None,
    file: Annotated[str | None, Query(min_length=1, max_length=2000, description="path")] = None,
    job: Annotated[str | None, Query(min_length=1, max_length=200)] = None,
) -> dict[str, Any]:
    """Lasting steps in test, file and job durations on the default branch, the most time
    added per run first; each with its medians, spread, commit range and bisect list."""
    query = ChangeQuery(state=state, since=since, kind=kind, test=test, file=file, job=job)
    return change_list(conn, project, query)


@router.post("/changes/{change_id}/state", **answers(ChangeStateSet, *PROJECT_ERRORS))
def change_state(
    project: AdminProject, conn: ConnDep, change_id: int, body: ChangeStateRequest
) -> dict[str, Any]:
    """Set a change's state (admin token): open, acknowledged (expected) or resolved."""
    return set_state(conn, project, change_id, body.state)
