"""The "What changed" page: lasting steps in durations on the default branch, the most time
added per run first, with their commits; a signed-in admin sets their state."""

from __future__ import annotations

from typing import Annotated, Any, get_args

from fastapi import APIRouter, Form, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy import Connection

from analysis.changes.listing import ChangeItem
from app.http.change_filters import ChangeFiltersDep
from app.http.deps import ConnDep
from app.http.params import ROW_ID_MAX
from app.http.session import csrf_ok, visitor_of
from app.pages.common import PageError, PageProject, project_context, render
from app.project_records import Project
from app.schemas.changes import ChangeSort, ChangeState
from app.services.changes import ChangeQuery, change_series, changes_of, set_state
from app.services.changes import project_default_branch as default_branch_of
from figures.change_step import change_step_figure
from figures.theme import figure_html

router = APIRouter(include_in_schema=False)
CHANGE_STATES = get_args(ChangeState)
# Changes a badge list shows on the overview, test and file pages.
BADGE_ROWS = 5


def is_admin(request: Request, conn: Connection, project: Project) -> bool:
    """True when the signed-in visitor holds an admin token of this project."""
    grant = visitor_of(request, conn).grant
    return grant is not None and grant.project.id == project.id and grant.allows("admin")


def changes_touching(conn: Connection, project: Project, query: ChangeQuery) -> list[ChangeItem]:
    """The open changes a page about one test, file or job shows (at most BADGE_ROWS)."""
    return changes_of(conn, project, query)[:BADGE_ROWS]


@router.get("/p/{slug}/changes", response_class=HTMLResponse)
def changes_page(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    query: ChangeFiltersDep,
    sort: ChangeSort = "per_run",
) -> Any:
    """Every change (or those matching the filters), as REST `GET .../changes` lists them."""
    context = project_context(
        request,
        conn,
        project,
        "changes",
        changes=changes_of(conn, project, query, sort),
        default_branch=default_branch_of(conn, project.id),
        admin=is_admin(request, conn, project),
        state_filter=query.state or "",
        kind_filter=query.kind or "",
        min_delta_s=query.min_delta_s,
        min_relative=query.min_relative,
        sort=sort,
        sorts=(
            ("per_run", "time per run"),
            ("per_week", "machine time a week"),
            ("cost", "money a week"),
        ),
        states=CHANGE_STATES,
    )
    return render(request, "changes.html", context)


@router.get("/p/{slug}/changes/{change_id}", response_class=HTMLResponse)
def change_page(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    change_id: Annotated[int, Path(ge=1, le=ROW_ID_MAX)],
) -> Any:
    """One change: its row of the list and its series around the step, the step marked."""
    answer = change_series(conn, project, change_id)
    context = project_context(
        request,
        conn,
        project,
        "changes",
        change=answer.change,
        changes=[answer.change],
        points=len(answer.points),
        admin=is_admin(request, conn, project),
        states=CHANGE_STATES,
        figure=figure_html(change_step_figure(answer.change, answer.points), "fig-step"),
    )
    return render(request, "change.html", context)


@router.post("/p/{slug}/changes/{change_id}/state", response_class=HTMLResponse)
def change_state_form(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    change_id: Annotated[int, Path(ge=1, le=ROW_ID_MAX)],
    state: Annotated[ChangeState, Form()],
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Any:
    """Set a change's state (a signed-in admin), then show the page again."""
    if not csrf_ok(request, csrf):
        raise PageError(403, "The form expired: reload the page and try again.")
    if not is_admin(request, conn, project):
        raise PageError(403, "Setting a change's state takes a signed-in admin token.")
    set_state(conn, project, change_id, state)
    return RedirectResponse(f"/p/{project.slug}/changes#change-{change_id}", status_code=303)
