"""What every dashboard page shares: templates and rendering, the page errors, the project
dependency (sign-in or error), filter-keeping links and the project layout's context."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy import Connection

from analysis.errors import AnswerError
from analysis.filters import Filters
from app.http.deps import ConnDep, authorize_grant
from app.http.session import (
    CSRF_FIELD,
    SESSION_COOKIE,
    csrf_nonce,
    csrf_token,
    end_session,
    set_csrf_cookie,
    visitor_of,
)
from app.pages.format import register_filters
from app.pages.static import CSS_URL, JS_URL, PLOTLY_URL
from app.project_records import Project
from app.services.case_reads import filter_choices

HERE = Path(__file__).parent
# Starlette turns autoescaping on for every template: report strings reach HTML only through
# it (tests/pages/test_xss.py shows hostile names literally on every page).
TEMPLATES = Jinja2Templates(directory=str(HERE / "templates"))
register_filters(TEMPLATES.env)

# The query parameters app.http.params.query_filters reads: links between pages keep them.
FILTER_PARAMS = (
    "days", "since", "until", "branch", "job", "label", "marker", "exclude_marker", "file",
)  # fmt: skip
WINDOWS_DAYS = (7, 14, 30, 90, 365)
TABLE_ROWS = 25


# Why the sign-in form is shown: the link names a reason, never free text (a crafted link
# must not put its own words on our sign-in page).
SIGN_IN_REASONS = {
    "private": "This project is private: sign in with a read token.",
    "stale": "Your sign-in is no longer valid: sign in again.",
}


class SignInRequired(Exception):
    """The visitor must sign in to see this page (`reason`: a SIGN_IN_REASONS key)."""

    def __init__(self, next_url: str, reason: str, *, clear_cookie: bool = False) -> None:
        super().__init__(SIGN_IN_REASONS[reason])
        self.next_url = next_url
        self.reason = reason
        self.clear_cookie = clear_cookie


class RedirectTo(Exception):
    """Send the visitor to another URL (303)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class PageError(Exception):
    """A page that cannot be shown (403, 404, 422, 429): rendered as an error page."""

    def __init__(
        self, status_code: int, message: str, headers: Mapping[str, str] | None = None
    ) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message
        self.headers = headers


def redirect(request: Request, exc: RedirectTo) -> Response:
    """Exception handler: 303 to the URL."""
    return RedirectResponse(exc.url, status_code=303)


def redirect_to_sign_in(request: Request, exc: SignInRequired) -> Response:
    """Exception handler: 303 to the sign-in form, back to the page afterwards."""
    query = urlencode({"next": exc.next_url, "reason": exc.reason})
    response = RedirectResponse(f"/signin?{query}", status_code=303)
    if exc.clear_cookie:
        end_session(response)
    return response


def error_page(request: Request, exc: PageError) -> Response:
    """Exception handler: the error page with the status."""
    response = render(
        request, "error.html", {"status": exc.status_code, "message": exc.message}, exc.status_code
    )
    response.headers.update(exc.headers or {})
    return response


def answer_error_page(request: Request, exc: AnswerError) -> Response:
    """A domain error as a page shows it: the error page with its status and message."""
    return error_page(request, PageError(exc.status, str(exc)))


def render(
    request: Request, template: str, context: dict[str, Any], status_code: int = 200
) -> HTMLResponse:
    """A template rendered with the layout's shared context (static URLs, the CSRF token of
    the sign-in/out forms)."""
    nonce, new = csrf_nonce(request)
    base = {
        "plotly_url": PLOTLY_URL,
        "css_url": CSS_URL,
        "js_url": JS_URL,
        "signed_in": bool(request.cookies.get(SESSION_COOKIE)),
        "csrf_field": CSRF_FIELD,
        "csrf": csrf_token(request, nonce),
    }
    response: HTMLResponse = TEMPLATES.TemplateResponse(
        request, template, {**base, **context}, status_code=status_code
    )
    if new:
        set_csrf_cookie(request, response, nonce)
    return response


def here(request: Request) -> str:
    """This page's path and query."""
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def page_project(request: Request, conn: ConnDep, slug: str) -> Project:
    """Dependency: the project in the path if this visitor may read it, else sign-in/error."""
    items = request.query_params.multi_items()
    if any(k in FILTER_PARAMS and not v for k, v in items):
        # The filter bar's "all" options submit empty values; an empty filter is no filter.
        kept = urlencode([(k, v) for k, v in items if v or k not in FILTER_PARAMS])
        raise RedirectTo(request.url.path + (f"?{kept}" if kept else ""))
    visitor = visitor_of(request, conn)
    try:
        return authorize_grant(visitor.grant, conn, slug, "read")
    except HTTPException as exc:
        if exc.status_code == 401:
            reason = "stale" if visitor.stale else "private"
            raise SignInRequired(here(request), reason, clear_cookie=visitor.stale) from exc
        raise PageError(exc.status_code, str(exc.detail), exc.headers) from exc


PageProject = Annotated[Project, Depends(page_project)]


class Links:
    """Builds page URLs that keep the current filters (the view stays shareable)."""

    def __init__(self, request: Request, slug: str) -> None:
        self.slug = slug
        self.filters = [(k, v) for k, v in request.query_params.multi_items() if k in FILTER_PARAMS]

    def query(self, **extra: Any) -> str:
        """`?days=30&job=unit...` with extra parameters added (None drops one)."""
        pairs = [(k, v) for k, v in self.filters if k not in extra]
        pairs += [(k, v) for k, v in extra.items() if v is not None]
        return f"?{urlencode(pairs)}" if pairs else ""

    def page(self, tab: str = "", **extra: Any) -> str:
        """A project page URL: "" overview, "time", "recommendations"."""
        return f"/p/{quote(self.slug)}" + (f"/{tab}" if tab else "") + self.query(**extra)

    def file(self, path: str) -> str:
        """The drill-down page of one test file."""
        return f"/p/{quote(self.slug)}/files/{quote(path)}" + self.query()

    def test(self, nodeid: str) -> str:
        """The page of one test."""
        return f"/p/{quote(self.slug)}/test" + self.query(nodeid=nodeid)


def project_context(
    request: Request, conn: Connection, project: Project, tab: str, **extra: Any
) -> dict[str, Any]:
    """What every project page's layout shows: tabs, the filter bar and its menus."""
    params = request.query_params
    return {
        "project": project,
        "tab": tab,
        "links": Links(request, project.slug),
        "choices": filter_choices(conn, project.id),
        "selected": {name: params.getlist(name) for name in FILTER_PARAMS},
        "days": params.get("days", "30"),
        "windows": WINDOWS_DAYS,
        **extra,
    }


def glob_literal(path: str) -> str:
    """An fnmatch pattern matching exactly `path` (brackets, * and ? taken literally)."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in path)


def only_file(filters: Filters, path: str) -> Filters:
    """`filters` narrowed to the one test file `path` (the file and test pages)."""
    return replace(filters, files=(glob_literal(path),))
