"""What a route declares about its answers: the success model and the error statuses it can
really answer, each with the one error body (`{"code", "detail"}`, app.http.errors).

A route writes `@router.get(path, **answers(Model, 401, 403, 404, 422))`; docs/api.md says why.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from app.schemas.base import ApiModel


class ErrorBody(ApiModel):
    """Every error answer: a stable code (docs/errors.md) and a sentence."""

    code: str = Field(description="stable error code, listed in docs/errors.md")
    detail: str = Field(description="what went wrong, in words")


class FieldIssue(ApiModel):
    """One invalid field of a request."""

    loc: list[str | int] = Field(
        description='where: ["query", "jobs"], ["body", "label", 0], ["path", "slug"]...'
    )
    msg: str
    type: str = Field(description="pydantic's error type, e.g. greater_than_equal")


class InvalidFieldBody(ApiModel):
    """A 422 naming the invalid fields: `detail` lists them."""

    code: Literal["invalid-field"]
    detail: list[FieldIssue]


_ERRORS: dict[int, tuple[str, Any]] = {
    400: ("The body cannot be decoded or parsed (`malformed-body`).", ErrorBody),
    401: (
        "No token, or an unknown, expired or revoked one (`token-required`, `token-invalid`).",
        ErrorBody,
    ),
    403: ("The token's scope or project does not allow this (`token-scope`).", ErrorBody),
    404: ("No such project, upload or token (`*-not-found`).", ErrorBody),
    409: ("The resource is not in a state that allows this.", ErrorBody),
    413: ("The body is larger than LAPTIME_MAX_UPLOAD_BYTES (`upload-too-large`).", ErrorBody),
    414: (
        "The path and query are over 1 MiB (`uri-too-long`): only values past the bounds "
        "this schema states can make them so.",
        ErrorBody,
    ),
    422: (
        "Invalid fields (`invalid-field`, `detail` lists them with `loc`), or a well-formed "
        "request the data cannot answer (`request-unprocessable`, `detail` a sentence).",
        InvalidFieldBody | ErrorBody,
    ),
    431: ("The header lines add up to more than 64 KiB (`headers-too-large`).", ErrorBody),
    429: (
        "Too many failed authentications from this address (`auth-rate-limited`); see Retry-After.",
        ErrorBody,
    ),
    500: ("An unexpected server error (`internal-error`); it was logged.", ErrorBody),
    503: (
        "The database is unavailable (`database-unavailable`); retry after Retry-After seconds.",
        ErrorBody,
    ),
}
# Any request at all can be refused with these, before any route runs: a request head too
# large (app.http.header_limit).
HEAD_ERRORS = (414, 431)
# Every route that reads the database can answer these, whatever its own errors.
ALWAYS = (*HEAD_ERRORS, 500, 503)
# What any route of a project can refuse: no or unknown token, another project's or too weak
# a token, no such project, invalid parameters, an address over its failed-auth budget.
PROJECT_ERRORS = (401, 403, 404, 422, 429)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses=` entries of these error statuses (and ALWAYS)."""
    chosen = sorted({*statuses, *ALWAYS})
    return {s: {"description": _ERRORS[s][0], "model": _ERRORS[s][1]} for s in chosen}


def head_error_responses() -> dict[int | str, dict[str, Any]]:
    """The `responses=` entries of HEAD_ERRORS, for a route that answers nothing else."""
    return {s: {"description": _ERRORS[s][0], "model": _ERRORS[s][1]} for s in HEAD_ERRORS}


def answers(model: Any, *statuses: int, **extra: Any) -> dict[str, Any]:
    """Route decorator arguments: the success model and the error statuses (plus ALWAYS).

    `response_model_exclude_unset` keeps a field the route left out (an unknown cost) out of
    the answer instead of writing null; such fields have a default and are not required.
    """
    responses = error_responses(*statuses)
    responses.update(extra.pop("responses", {}))
    return {
        "response_model": model,
        "response_model_exclude_unset": True,
        "responses": responses,
        **extra,
    }
