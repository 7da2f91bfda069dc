"""Endpoints of a project: rollups, pipelines, jobs, trend, uploads; its tokens (admin)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, TypeVar

import pandas as pd
from fastapi import APIRouter, Path, Query
from fastapi.responses import Response
from pydantic import BaseModel, BeforeValidator, Field

from analysis.rollups.shares import records_from_frame
from app.http.deps import AdminProject, ConnDep, ReadProject
from app.http.errors import ApiError
from app.http.params import ROW_ID_MAX, FiltersDep, MaybeText, Text
from app.http.responses import PROJECT_ERRORS, answers
from app.project_records import SCOPES
from app.schemas.reads import (
    Completeness,
    JobRow,
    Jobs,
    NewToken,
    PipelineRow,
    Pipelines,
    Revoked,
    Rollup,
    RollupRow,
    TokenList,
    Trend,
    TrendDay,
)
from app.schemas.uploads import UploadList, UploadSummary
from app.services.project_reads import project_pipelines, project_rollup
from app.services.projects import issue_token, list_tokens, revoke_token
from app.services.uploads import recent_uploads

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["projects"])
CSV = {200: {"content": {"text/csv": {"schema": {"type": "string"}}}, "description": "rows"}}


Row = TypeVar("Row", bound=BaseModel)


def _rows(model: type[Row], frame: pd.DataFrame) -> list[Row]:
    """A rollup frame's rows as its answer rows (the columns are checked against the models
    by tests/server/test_read_schema_drift.py)."""
    return [model.model_validate(record) for record in records_from_frame(frame)]


@router.get("/rollups", **answers(Rollup, *PROJECT_ERRORS, responses=CSV))
def rollups(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    by: Annotated[
        Text, Query(description="file, function, test, marker, job, machine, branch or `label:KEY`")
    ] = "file",
    within: Annotated[MaybeText, Query(description="parent dimension for parent_share")] = None,
    sort: Annotated[Text, Query(description="column to sort rows by")] = "total_s",
    desc: bool = True,
    limit: Annotated[int | None, Query(ge=1, le=100_000)] = 100,
    format: Literal["json", "csv"] = "json",
) -> Any:
    """Test time split by a dimension, with shares of the total and within the parent."""
    result = project_rollup(
        conn, project.id, filters, by=by, within=within, sort=sort, descending=desc, limit=limit
    )
    if format == "csv":
        buffer = io.StringIO()
        result.rows.to_csv(buffer, index=False)
        return Response(buffer.getvalue(), media_type="text/csv")
    return Rollup(
        by=result.by,
        within=result.within,
        grand_total_s=result.grand_total_s,
        keys_total=result.keys_total,
        completeness=Completeness.model_validate(result.completeness, from_attributes=True),
        rows=[RollupRow.model_validate(row) for row in result.to_records()],
    )


@router.get("/pipelines", **answers(Pipelines, *PROJECT_ERRORS))
def pipelines(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 200,
) -> Pipelines:
    """Per pipeline run: developer wait (longest job) and machine time (sum of job walls)."""
    report = project_pipelines(conn, project.id, filters)
    summary = report.pipelines
    return Pipelines(
        runs=summary.runs,
        estimated_walls=summary.estimated_walls,
        runs_without_pipeline=summary.runs_without_pipeline,
        pipelines=_rows(PipelineRow, summary.pipelines.head(limit)),
        trend=_rows(TrendDay, report.trend),
    )


@router.get("/jobs", **answers(Jobs, *PROJECT_ERRORS))
def jobs(project: ReadProject, conn: ConnDep, filters: FiltersDep) -> Jobs:
    """Per job: runs, median wall and test time, setup overhead (wall - test time)."""
    report = project_pipelines(conn, project.id, filters)
    return Jobs(jobs=_rows(JobRow, report.jobs))


@router.get("/trend", **answers(Trend, *PROJECT_ERRORS))
def trend(project: ReadProject, conn: ConnDep, filters: FiltersDep) -> Trend:
    """Per day: wait, machine time and test time."""
    report = project_pipelines(conn, project.id, filters)
    return Trend(days=_rows(TrendDay, report.trend))


@router.get("/uploads", **answers(UploadList, *PROJECT_ERRORS))
def uploads(
    project: ReadProject, conn: ConnDep, limit: Annotated[int, Query(ge=1, le=1000)] = 50
) -> UploadList:
    """The latest uploads and their status (failed ones with their error)."""
    lines = recent_uploads(conn, project.id, limit=limit)
    return UploadList(
        uploads=[UploadSummary.model_validate(line, from_attributes=True) for line in lines]
    )


def _json_integer(value: object) -> object:
    """JSON types as the schema says them: `true` or "7" is not a number of days (pydantic
    would take them); 7.0 is (JSON Schema's integer), 7.5 is refused by the int that follows."""
    if isinstance(value, bool | str):
        raise ValueError("must be a JSON integer")
    return value


class TokenRequest(BaseModel):
    """A token to create."""

    scope: Literal["upload", "read", "admin"] = "read"
    expires_in_days: Annotated[int, BeforeValidator(_json_integer), Field(ge=1, le=3650)] | None = (
        Field(default=None, description="lifetime in days; none: never expires")
    )


@router.get("/tokens", **answers(TokenList, *PROJECT_ERRORS))
def tokens(project: AdminProject, conn: ConnDep) -> TokenList:
    """The project's tokens (admin token): id, scope, first characters, expiry, revocation.
    Never the secrets: only their hashes are stored."""
    return TokenList.of(list_tokens(conn, project))


@router.post("/tokens", status_code=201, **answers(NewToken, 400, *PROJECT_ERRORS))
def create_token(project: AdminProject, conn: ConnDep, body: TokenRequest) -> NewToken:
    """Create a token (admin token). The answer holds the secret, this once."""
    assert body.scope in SCOPES
    expires_at = (
        datetime.now(UTC) + timedelta(days=body.expires_in_days) if body.expires_in_days else None
    )
    info, secret = issue_token(conn, project, body.scope, expires_at=expires_at)
    return NewToken.of_new(info, secret)


@router.delete("/tokens/{token_id}", **answers(Revoked, *PROJECT_ERRORS))
def revoke(
    project: AdminProject, conn: ConnDep, token_id: Annotated[int, Path(ge=1, le=ROW_ID_MAX)]
) -> Revoked:
    """Revoke a token by id (admin token): it answers 401 from the next request on."""
    if not revoke_token(conn, project, token_id):
        raise ApiError(404, "token-not-found", f"no active token {token_id} in this project")
    return Revoked(revoked=token_id)
