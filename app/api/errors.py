"""The API's error answers: one JSON shape `{"code", "detail"}` with a stable code.

Codes are a contract (clients and scripts match on them); every one is documented in
docs/errors.md and a test fails when one is missing there.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import psycopg
import sqlalchemy.exc
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

API_ERROR_CODES: dict[str, str] = {
    "token-required": "the request carries no token",
    "token-invalid": "the token is unknown or revoked",
    "token-scope": "the token's scope or project does not allow this",
    "upload-too-large": "the request body is larger than the upload limit",
    "invalid-field": "a field is missing, malformed, too long or out of range",
    "upload-not-found": "no such upload",
    "upload-not-failed": "only a failed upload can be re-queued",
    "database-unavailable": "the database cannot be reached right now; retry later",
    "internal-error": "an unexpected server error",
    "plan-not-found": "no stored plan has this id in this project",
}
# What a 503 asks clients to wait before retrying: long enough for a Postgres restart to
# finish accepting connections, short enough that CI jobs do not idle.
RETRY_AFTER_S = 5
# Errors that mean "the database cannot serve now", not "this request is wrong": connection
# refused or lost, shutdown, pool exhausted, disk full, serialization failure.
DATABASE_DOWN: tuple[type[Exception], ...] = (
    sqlalchemy.exc.OperationalError,
    sqlalchemy.exc.TimeoutError,
    psycopg.OperationalError,
)

log = logging.getLogger(__name__)


class ApiError(HTTPException):
    """An HTTPException with a registered error code."""

    def __init__(
        self, status_code: int, code: str, detail: str, headers: dict[str, str] | None = None
    ) -> None:
        if code not in API_ERROR_CODES:
            raise ValueError(f"unregistered API error code {code!r}")
        super().__init__(status_code=status_code, detail=detail, headers=headers)
        self.code = code


def error_response(
    status_code: int, code: str, detail: object, headers: Mapping[str, str] | None = None
) -> JSONResponse:
    """The one error body: `{"code", "detail"}`."""
    return JSONResponse({"code": code, "detail": detail}, status_code=status_code, headers=headers)


def database_unavailable() -> JSONResponse:
    """503 with Retry-After: the client should send the same request again later."""
    return error_response(
        503,
        "database-unavailable",
        "the database cannot be reached; retry later (repeating an upload is safe)",
        headers={"Retry-After": str(RETRY_AFTER_S)},
    )


def validation_detail(exc: RequestValidationError) -> list[dict[str, Any]]:
    """FastAPI's list of `{loc, msg, type}`, one per invalid field (`loc` names it); the
    input itself is left out: it is hostile, and the client has it."""
    return [
        {
            "loc": list(error.get("loc", ())),
            "msg": str(error.get("msg", "invalid")).removeprefix("Value error, "),
            "type": error.get("type", "value_error"),
        }
        for error in exc.errors()
    ]


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return error_response(exc.status_code, exc.code, exc.detail, exc.headers)


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(422, "invalid-field", validation_detail(exc))


async def _database_down(request: Request, exc: Exception) -> JSONResponse:
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc)
    return database_unavailable()


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    # Starlette logs the traceback after this handler answers; the body says nothing internal.
    return error_response(500, "internal-error", "unexpected server error; it has been logged")


def install_error_handlers(app: FastAPI) -> None:
    """Answer ApiError, invalid requests, database outages and any other error as JSON."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    for kind in DATABASE_DOWN:
        app.add_exception_handler(kind, _database_down)
    app.add_exception_handler(Exception, _internal)
