"""The dashboard's start: the projects list."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.http.deps import ConnDep
from app.http.session import visitor_of
from app.pages.common import render
from app.services.projects import list_projects

router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def home() -> Response:
    """The dashboard starts at the projects list."""
    return RedirectResponse("/projects", status_code=303)


@router.get("/projects", response_class=HTMLResponse)
def projects_page(request: Request, conn: ConnDep) -> Any:
    """Public projects, and the project of the signed-in token."""
    grant = visitor_of(request, conn).grant
    visible = [
        p
        for p in list_projects(conn)
        if p.public or (grant is not None and grant.project.id == p.id)
    ]
    return render(request, "projects.html", {"projects": visible, "grant": grant})
