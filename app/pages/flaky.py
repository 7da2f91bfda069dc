"""The "Flaky" page: flaky tests ranked by what they cost, each with its timeline, and the
cost per file, job and week."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy import Connection

from app.http.deps import ConnDep, authorize_grant
from app.http.params import FiltersDep
from app.http.session import csrf_ok, visitor_of
from app.pages.common import PageError, PageProject, project_context, render
from app.project_records import Project
from app.schemas.flaky import flaky_answer
from app.services.flaky import DEFAULT_TESTS, MAX_TESTS, project_flaky
from app.services.quarantine import quarantine_test, release_test

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
    answer = flaky_answer(project_flaky(conn, project, filters), limit=limit)
    context = project_context(
        request,
        conn,
        project,
        "flaky",
        answer=answer,
        timeline_mark=timeline_mark,
        admin=_admin(request, conn, project) is not None,
    )
    return render(request, "flaky.html", context)


def _admin(request: Request, conn: Connection, project: Project) -> Project | None:
    """The project when the signed-in visitor holds its admin token, else None."""
    grant = visitor_of(request, conn).grant
    if grant is None or grant.project.id != project.id or not grant.allows("admin"):
        return None
    return project


@router.post("/p/{slug}/flaky/quarantine", response_class=HTMLResponse)
def quarantine_button(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    nodeid: Annotated[str, Form(min_length=1, max_length=4096)],
    action: Annotated[str, Form(pattern="^(add|remove)$")],
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Any:
    """A signed-in admin quarantines a test from the Flaky page, or ends its quarantine."""
    if not csrf_ok(request, csrf):
        raise PageError(403, "The form expired: reload the Flaky page and press the button again.")
    try:
        authorize_grant(visitor_of(request, conn).grant, conn, project.slug, "admin")
    except HTTPException as exc:
        raise PageError(403, "Only a signed-in admin can change the quarantine.") from exc
    if "\x00" in nodeid:
        raise PageError(422, "nodeid: not a test name")
    if action == "add":
        quarantine_test(conn, project, nodeid, reason="from the Flaky page")
    else:
        release_test(conn, project, nodeid)
    # Returned, not raised: an exception would roll the change back with the request's
    # transaction.
    return RedirectResponse(f"/p/{project.slug}/flaky", status_code=303)
