"""The flaky endpoint: flaky tests ranked by what they cost."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from app.http.deps import ConnDep, ReadProject
from app.http.params import FiltersDep
from app.http.responses import PROJECT_ERRORS, answers
from app.schemas.flaky import Flaky, flaky_answer
from app.services.flaky import DEFAULT_TESTS, MAX_TESTS, project_flaky

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["flaky"])


@router.get("/flaky", **answers(Flaky, *PROJECT_ERRORS))
def read_flaky(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    limit: Annotated[int, Query(ge=1, le=MAX_TESTS, description="tests listed")] = DEFAULT_TESTS,
) -> Flaky:
    """Flaky tests (passed on a retry, or failed where the same commit and cell passed), most
    costly first, with their cost per test, file, job and week as machine time, dollars and
    developer wait."""
    return flaky_answer(project_flaky(conn, project, filters), limit=limit)
