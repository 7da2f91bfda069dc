"""The compare endpoint: what a pipeline changed against the base branch."""

from __future__ import annotations

from fastapi import APIRouter, Query

from app.http.deps import ConnDep, ReadProject
from app.http.responses import PROJECT_ERRORS, answers
from app.schemas.compare import Compare
from app.services.compare import compare_pipeline

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["compare"])


@router.get("/compare", **answers(Compare, *PROJECT_ERRORS))
def read_compare(
    project: ReadProject,
    conn: ConnDep,
    pipeline: str = Query(min_length=1, max_length=200),
    base: str = Query("main", min_length=1, max_length=200),
) -> Compare:
    """A pipeline's wall, test time and tests against the base branch's recent runs."""
    return Compare.of(compare_pipeline(conn, project, pipeline, base))
