"""The "Flaky" page: flaky tests ranked by what they cost, each with its timeline, and the
cost per file, job and week."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse

from app.http.deps import ConnDep
from app.http.params import FiltersDep
from app.pages.common import PageProject, project_context, render
from app.services.flaky import DEFAULT_TESTS, MAX_TESTS, project_flaky

router = APIRouter(include_in_schema=False)

# One character per day of a test's timeline, by its share of flaky results.
TIMELINE_MARKS = "▁▃▅▇"


def timeline_mark(flaky: int, runs: int) -> str:
    """A day's mark: the lowest for a day without flakes, higher the more of it flaked."""
    if flaky == 0 or runs == 0:
        return TIMELINE_MARKS[0]
    step = min(len(TIMELINE_MARKS) - 1, 1 + int(flaky / runs * (len(TIMELINE_MARKS) - 1)))
    return TIMELINE_MARKS[step]


@router.get("/p/{slug}/flaky", response_class=HTMLResponse)
def flaky_page(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    filters: FiltersDep,
    limit: Annotated[int, Query(ge=1, le=MAX_TESTS)] = DEFAULT_TESTS,
) -> Any:
    """Flaky tests most costly first, their timelines, and the cost per file, job and week."""
    answer = project_flaky(conn, project, filters, limit=limit)
    context = project_context(
        request, conn, project, "flaky", answer=answer, timeline_mark=timeline_mark
    )
    return render(request, "flaky.html", context)
