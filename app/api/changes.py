"""The changes endpoints: what got slower (or faster) on the default branch, since which commit."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path

from app.http.change_filters import ChangeFiltersDep
from app.http.deps import AdminProject, ConnDep, ReadProject
from app.http.params import ROW_ID_MAX
from app.http.responses import PROJECT_ERRORS, answers
from app.schemas.changes import (
    ChangeList,
    ChangeSeriesModel,
    ChangeSort,
    ChangeStateRequest,
    ChangeStateSet,
    DefaultBranchRequest,
    DefaultBranchSet,
)
from app.services.changes import (
    change_list,
    change_series,
    set_default_branch,
    set_state,
)

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["changes"])


@router.get("/changes", **answers(ChangeList, *PROJECT_ERRORS))
def read_changes(
    project: ReadProject, conn: ConnDep, query: ChangeFiltersDep, sort: ChangeSort = "per_run"
) -> ChangeList:
    """Lasting steps in test, function, file and job durations and in pipeline wall and
        machine time on the default branch, the most time added per run first; each with its
        medians, spread, commit range and bisect list. `file` and `job` are repeatable (any of
        them; they match no pipeline change); an empty one is no filter. `sort`: the most time
    added per run first (default), the most machine time a week, or the most money a week."""
    return ChangeList.of(change_list(conn, project, query, sort))


@router.get("/changes/{change_id}/series", **answers(ChangeSeriesModel, *PROJECT_ERRORS))
def read_change_series(
    project: ReadProject,
    conn: ConnDep,
    change_id: Annotated[int, Path(ge=1, le=ROW_ID_MAX)],
) -> ChangeSeriesModel:
    """One change and its series' points on either side of the step (up to 40 runs each),
    each as detection took it at ingest: what the change page's figure draws."""
    return ChangeSeriesModel.of(change_series(conn, project, change_id))


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
