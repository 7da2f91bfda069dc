"""The "What changed" page: lasting steps in durations on the default branch, the most time
added per run first, with their commits; a signed-in admin sets their state."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Form, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy import Connection

from analysis.changes.listing import ChangeItem
from app.http.deps import ConnDep
from app.http.params import ROW_ID_MAX, IsoDate, NodeidText, TextList, given
from app.http.session import csrf_ok, visitor_of
from app.pages.common import PageError, PageProject, project_context, render
from app.project_records import Project
from app.schemas.changes import ChangeKind, ChangeSort, ChangeState
from app.services.changes import ChangeQuery, changes_of, set_state
from app.services.changes import project_default_branch as default_branch_of

router = APIRouter(include_in_schema=False)
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
    state: ChangeState | None = None,
    kind: ChangeKind | None = None,
    sort: ChangeSort = "per_run",
    since: IsoDate = None,
    test: NodeidText | None = None,
    file: TextList = [],  # noqa: B006 (FastAPI copies defaults; never mutated)
    job: TextList = [],  # noqa: B006
) -> Any:
    """Every change (or those matching the filters), as REST `GET .../changes` lists them."""
    query = ChangeQuery(
        state=state,
        since=since,
        kind=kind,
        tests=(test,) if test else (),
        files=given(file),
        jobs=given(job),
    )
    context = project_context(
        request,
        conn,
        project,
        "changes",
        changes=changes_of(conn, project, query, sort),
        default_branch=default_branch_of(conn, project.id),
        admin=is_admin(request, conn, project),
        state_filter=state or "",
        kind_filter=kind or "",
        sort=sort,
        sorts=(
            ("per_run", "time per run"),
            ("per_week", "machine time a week"),
            ("cost", "money a week"),
        ),
        states=("open", "acknowledged", "resolved"),
    )
    return render(request, "changes.html", context)


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
