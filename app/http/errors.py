"""The API's error answers: one JSON shape `{"code", "detail"}` with a stable code.

`detail` is a sentence, except for `invalid-field` (422), where it is FastAPI's list of
`{loc, msg, type}` naming each invalid field (`invalid()` in app.http.params makes one).

Codes are a contract (clients and scripts match on them); every one is documented in
docs/errors.md and a test fails when one is missing there.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Mapping
from typing import Any

import psycopg
import sqlalchemy.exc
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from analysis.errors import AnswerError

API_ERROR_CODES: dict[str, str] = {
    "token-required": "the request carries no token",
    "token-invalid": "the token is unknown or revoked",
    "token-scope": "the token's scope or project does not allow this",
    "upload-too-large": "the request body is larger than the upload limit",
    "invalid-field": "a field is missing, malformed, too long or out of range",
    "upload-not-found": "no such upload",
    "upload-not-failed": "only a failed upload can be re-queued",
    "project-not-found": "no such project",
    "token-not-found": "no such active token in this project",
    "request-unprocessable": "well-formed, but the project's data or settings cannot answer it",
    "auth-rate-limited": "too many failed authentications from this address lately",
    "headers-too-large": "the request's headers are larger than the server accepts",
    "uri-too-long": "the request's path and query are longer than the server accepts",
    "request-timeout": "the request's head or body did not arrive in time",
    "malformed-body": "the request body cannot be parsed (e.g. broken multipart framing)",
    "not-found": "no such route",
    "method-not-allowed": "the route does not take this method",
    "database-unavailable": "the database cannot be reached right now; retry later",
    "internal-error": "an unexpected server error",
    "plan-not-found": "no stored plan has this id in this project",
    "pipeline-unknown": "no run of this project carries this CI pipeline id",
    "quarantine-not-found": "this test is not quarantined in this project",
    "change-not-found": "no change of this project has this id",
    "shard-pin-mismatch": "this pipeline's shards were pinned to a plan of other collected tests",
    "webhook-not-found": "no webhook has this id in this project",
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


@functools.cache
def _path_pattern(template: str) -> re.Pattern[str]:
    """The regex of an OpenAPI path template: `{name}` is one segment (`{name:path}` more)."""
    parts = re.split(r"(\{[^}]+\})", template)
    return re.compile(
        "".join(
            ("(.+)" if p.endswith(":path}") else "([^/]+)") if p.startswith("{") else re.escape(p)
            for p in parts
        )
    )


def allowed_methods(openapi: dict[str, Any], path: str) -> list[str]:
    """Every method the documented route of `path` serves. Each method of a path is a route
    of its own, so the framework's Allow header names only the first route it matched."""
    for template, operations in openapi.get("paths", {}).items():
        if _path_pattern(template).fullmatch(path):
            return sorted(method.upper() for method in operations)
    return []


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    # The framework's own refusals (no such route, wrong method, a body that is not multipart)
    # in the one shape; everything of ours raises ApiError with its code.
    assert isinstance(exc, StarletteHTTPException)
    detail, headers = str(exc.detail), exc.headers
    if exc.status_code == 404:
        return error_response(404, "not-found", detail, headers)
    if exc.status_code == 405:
        allowed = allowed_methods(request.app.openapi(), request.url.path)
        if allowed:
            headers = {**(headers or {}), "Allow": ", ".join(allowed)}
        return error_response(405, "method-not-allowed", detail, headers)
    if exc.status_code == 400:
        return error_response(400, "malformed-body", detail, headers)
    # Any other status the framework raises: answered as an unexpected error would be, since
    # no code documents it (a test would then fail on the schema).
    log.error("uncoded HTTP %s on %s: %s", exc.status_code, request.url.path, detail)
    return error_response(500, "internal-error", "unexpected server error; it has been logged")


async def _invalid(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    return error_response(422, "invalid-field", validation_detail(exc))


async def _database_down(request: Request, exc: Exception) -> JSONResponse:
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, exc)
    return database_unavailable()


def answer_error_response(exc: AnswerError) -> JSONResponse:
    """A domain error as the API answers it: its own status and code, its message."""
    return error_response(exc.status, exc.code, str(exc))


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    # Starlette logs the traceback after this handler answers; the body says nothing internal.
    return error_response(500, "internal-error", "unexpected server error; it has been logged")


def install_error_handlers(app: FastAPI) -> None:
    """Answer ApiError, invalid requests, database outages and any other error as JSON."""
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _invalid)
    for kind in DATABASE_DOWN:
        app.add_exception_handler(kind, _database_down)
    app.add_exception_handler(Exception, _internal)
