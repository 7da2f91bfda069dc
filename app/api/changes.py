"""The changes endpoints: what got slower (or faster) on the default branch, since which commit."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from app.http.deps import AdminProject, ConnDep, ReadProject
from app.http.params import ROW_ID_MAX, IsoDate, NodeidText, TextList, given
from app.http.responses import PROJECT_ERRORS, answers
from app.schemas.changes import (
    ChangeKind,
    ChangeList,
    ChangeSort,
    ChangeState,
    ChangeStateRequest,
    ChangeStateSet,
    DefaultBranchRequest,
    DefaultBranchSet,
)
from app.services.changes import ChangeQuery, change_list, set_default_branch, set_state

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["changes"])


@router.get("/changes", **answers(ChangeList, *PROJECT_ERRORS))
def read_changes(
    project: ReadProject,
    conn: ConnDep,
    state: ChangeState | None = None,
    since: Annotated[IsoDate, Query(description="first run after the step on or after")] = None,
    kind: ChangeKind | None = None,
    test: Annotated[NodeidText | None, Query(description="a test's nodeid")] = None,
    file: TextList = [],  # noqa: B006 (FastAPI copies defaults; never mutated)
    job: TextList = [],  # noqa: B006
    sort: ChangeSort = "per_run",
) -> ChangeList:
    """Lasting steps in test, function, file and job durations and in pipeline wall and
        machine time on the default branch, the most time added per run first; each with its
        medians, spread, commit range and bisect list. `file` and `job` are repeatable (any of
        them; they match no pipeline change); an empty one is no filter. `sort`: the most time
    added per run first (default), the most machine time a week, or the most money a week."""
    query = ChangeQuery(
        state=state,
        since=since,
        kind=kind,
        tests=(test,) if test else (),
        files=given(file),
        jobs=given(job),
    )
    return ChangeList.of(change_list(conn, project, query, sort))


@router.post("/changes/{change_id}/state", **answers(ChangeStateSet, 400, *PROJECT_ERRORS))
def change_state(
    project: AdminProject,
    conn: ConnDep,
    change_id: Annotated[int, Path(ge=1, le=ROW_ID_MAX)],
    body: ChangeStateRequest,
) -> ChangeStateSet:
    """Set a change's state (admin token): open, acknowledged (expected) or resolved."""
    return ChangeStateSet.of(set_state(conn, project, change_id, body.state))


@router.put("/default-branch", **answers(DefaultBranchSet, 400, *PROJECT_ERRORS))
def put_default_branch(
    project: AdminProject, conn: ConnDep, body: DefaultBranchRequest
) -> DefaultBranchSet:
    """Name the branch whose runs are watched for changes (admin token); null detects it
    again. Uploads from now on are watched on it; stored changes stay as they are."""
    return DefaultBranchSet.of(set_default_branch(conn, project, body.branch))
