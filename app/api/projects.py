"""Read endpoints of a project: rollups, pipelines, jobs, trend, uploads."""

from __future__ import annotations

import io
from typing import Annotated, Any, Literal

from fastapi import APIRouter, HTTPException, Query
from fastapi.responses import Response

from analysis.rollups import records_from_frame
from app.api.deps import ConnDep, ReadProject
from app.api.params import FiltersDep, Text
from app.db.uploads import recent_uploads
from app.project_reads import project_pipelines, project_rollup

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["projects"])


@router.get("/rollups")
def rollups(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    by: Annotated[Text, Query(description="file|function|test|marker|job|label:<key>")] = "file",
    within: Annotated[Text | None, Query(description="parent dimension for parent_share")] = None,
    sort: Annotated[Text, Query(description="column to sort rows by")] = "total_s",
    desc: bool = True,
    limit: Annotated[int | None, Query(ge=1, le=100_000)] = 100,
    format: Literal["json", "csv"] = "json",
) -> Any:
    """Test time split by a dimension, with shares of the total and within the parent."""
    try:
        result = project_rollup(
            conn, project.id, filters, by=by, within=within, sort=sort, descending=desc, limit=limit
        )
    except ValueError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc
    if format == "csv":
        buffer = io.StringIO()
        result.rows.to_csv(buffer, index=False)
        return Response(buffer.getvalue(), media_type="text/csv")
    return {
        "by": result.by,
        "within": result.within,
        "grand_total_s": result.grand_total_s,
        "keys_total": result.keys_total,
        "completeness": result.completeness.to_dict(),
        "rows": result.to_records(),
    }


@router.get("/pipelines")
def pipelines(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 200,
) -> dict[str, Any]:
    """Per pipeline run: developer wait (longest job) and machine time (sum of job walls)."""
    report = project_pipelines(conn, project.id, filters)
    summary = report.pipelines
    return {
        "runs": summary.runs,
        "estimated_walls": summary.estimated_walls,
        "runs_without_pipeline": summary.runs_without_pipeline,
        "pipelines": records_from_frame(summary.pipelines.head(limit)),
        "trend": records_from_frame(report.trend),
    }


@router.get("/jobs")
def jobs(project: ReadProject, conn: ConnDep, filters: FiltersDep) -> dict[str, Any]:
    """Per job: runs, median wall and test time, setup overhead (wall - test time)."""
    report = project_pipelines(conn, project.id, filters)
    return {"jobs": records_from_frame(report.jobs)}


@router.get("/trend")
def trend(project: ReadProject, conn: ConnDep, filters: FiltersDep) -> dict[str, Any]:
    """Per day: wait, machine time and test time."""
    report = project_pipelines(conn, project.id, filters)
    return {"days": records_from_frame(report.trend)}


@router.get("/uploads")
def uploads(
    project: ReadProject, conn: ConnDep, limit: Annotated[int, Query(ge=1, le=1000)] = 50
) -> dict[str, Any]:
    """The latest uploads and their status (failed ones with their error)."""
    return {"uploads": recent_uploads(conn, project.id, limit=limit)}
