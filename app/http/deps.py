"""Request dependencies: the per-request transaction and token checks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import contextmanager_in_threadpool
from sqlalchemy import Connection, Engine

from app.db.auth_failures import record_failure, refusal_wait_s
from app.db.projects import get_project, resolve_token
from app.http.connection_slots import connection_slot, hold_connection_slot
from app.http.errors import ApiError
from app.project_records import Project, TokenGrant
from app.settings import Settings


def get_settings(request: Request) -> Settings:
    """The Settings the app was built with."""
    settings: Settings = request.app.state.settings
    return settings


@contextmanager
def _request_transaction(request: Request) -> Iterator[Connection]:
    engine: Engine = request.app.state.engine
    try:
        with engine.begin() as conn:
            yield conn
    finally:
        record_noted_auth_failure(request)


async def get_conn(request: Request) -> AsyncIterator[Connection]:
    """One transaction per request: committed when the route returns, rolled back on error.
    A failed authentication noted meanwhile is recorded once the connection is back. The
    request waits for a pool slot in the event loop first (app.http.connection_slots), then
    opens and closes the transaction in worker threads as a plain dependency would."""
    async with (
        connection_slot(request.app.state.engine),
        contextmanager_in_threadpool(_request_transaction(request)) as conn,
    ):
        yield conn


# scope="function": the commit runs when the route returns, BEFORE the response is sent, so a
# 2xx means committed and a commit failure reaches the exception handlers as a 5xx. (The
# default, "request", commits after the response has gone out.)
ConnDep = Annotated[Connection, Depends(get_conn, scope="function")]


def get_engine(request: Request) -> Engine:
    """The app's engine, for a route that opens its transaction itself (after slow work)."""
    engine: Engine = request.app.state.engine
    return engine


EngineDep = Annotated[Engine, Depends(get_engine)]
# A route that opens its transactions itself holds a pool slot for its whole run.
ConnectionSlot = Annotated[None, Depends(hold_connection_slot, scope="function")]
SettingsDep = Annotated[Settings, Depends(get_settings)]


def presented_token(request: Request) -> str | None:
    """The bearer token of the request. Cookies are never credentials for the API: the
    dashboard's signed session cookie is read by the pages alone (app.http.session)."""
    header = request.headers.get("authorization", "")
    if header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return None


def client_address(request: Request) -> str:
    """The address failed authentications are counted against (the proxy's behind a proxy
    unless uvicorn runs with --proxy-headers)."""
    return request.client.host if request.client else "unknown"


def refuse_if_limited(request: Request, conn: Connection) -> None:
    """429 with Retry-After (the seconds left in the window) when this address has failed
    authentication too often lately, counted over every process of the deployment."""
    settings: Settings = request.app.state.settings
    wait_s = refusal_wait_s(
        conn,
        client_address(request),
        failures=settings.auth_failures,
        window_s=settings.auth_failure_window_s,
    )
    if wait_s is not None:
        raise ApiError(
            429,
            "auth-rate-limited",
            "too many failed authentications from this address: retry later",
            headers={"Retry-After": str(wait_s)},
        )


_AUTH_FAILED = "laptime_auth_failed"


def record_noted_auth_failure(request: Request) -> None:
    """Count the failed authentication `check_token` noted on this request, if any, in a
    transaction of its own: the request's is rolled back by the 401 (and may be read-only).
    Called once the request's connection is released, so a burst of wrong tokens never holds
    one pooled connection while waiting for another (a pool deadlock)."""
    if not getattr(request.state, _AUTH_FAILED, False):
        return
    setattr(request.state, _AUTH_FAILED, False)
    settings: Settings = request.app.state.settings
    engine: Engine = request.app.state.engine
    with engine.begin() as conn:
        record_failure(conn, client_address(request), window_s=settings.auth_failure_window_s)


def check_token(request: Request, conn: Connection, token: str) -> TokenGrant | None:
    """The grant of `token` (None when unknown, revoked or expired, counted as a failure);
    429 when this address is over its failure budget."""
    refuse_if_limited(request, conn)
    grant = resolve_token(conn, token)
    if grant is None:
        # Recorded by whoever holds `conn` once it is released (get_conn, the upload guard).
        setattr(request.state, _AUTH_FAILED, True)
    return grant


def grant_of(request: Request, conn: Connection) -> TokenGrant | None:
    """Resolve the presented token; a token that is presented but unknown is a 401."""
    token = presented_token(request)
    if token is None:
        return None
    grant = check_token(request, conn, token)
    if grant is None:
        raise ApiError(401, "token-invalid", "invalid, expired or revoked token")
    return grant


def authorize_grant(grant: TokenGrant | None, conn: Connection, slug: str, action: str) -> Project:
    """The project `slug` if `grant` (None: anonymous) may do `action` on it; 401/403/404."""
    project = get_project(conn, slug)
    if project is None:
        if grant is None:
            raise ApiError(401, "token-required", "a token is required")
        raise ApiError(404, "project-not-found", f"no project {slug!r}")
    if action == "read" and project.public:
        # A public project's reads are open to everyone, whatever token (of whichever
        # project) they hold; its writes still need its own token.
        return project
    if grant is None:
        raise ApiError(401, "token-required", "a token is required")
    if grant.project.id != project.id:
        raise ApiError(403, "token-scope", "this token belongs to another project")
    if not grant.allows(action):
        raise ApiError(
            403, "token-scope", f"this token's scope ({grant.scope}) does not allow {action}"
        )
    return project


def authorize(request: Request, conn: Connection, slug: str, action: str) -> Project:
    """The project `slug` if the request's bearer token may do `action` on it."""
    return authorize_grant(grant_of(request, conn), conn, slug, action)


def read_project(request: Request, conn: ConnDep, slug: str) -> Project:
    """Dependency: the project in the path, readable by this request."""
    return authorize(request, conn, slug, "read")


def admin_project(request: Request, conn: ConnDep, slug: str) -> Project:
    """Dependency: the project in the path, administrable by this request."""
    return authorize(request, conn, slug, "admin")


ReadProject = Annotated[Project, Depends(read_project)]
AdminProject = Annotated[Project, Depends(admin_project)]
