"""Which request is an upload: the upload guard, the outcome counter and the request log
all recognise `POST /api/v1/uploads` the same way."""

from __future__ import annotations

from starlette.types import Scope

UPLOADS_PATH = "/api/v1/uploads"


def is_upload_post(scope: Scope) -> bool:
    """Whether the request is a `POST /api/v1/uploads` (with or without a trailing slash)."""
    return bool(
        scope["type"] == "http"
        and scope["method"] == "POST"
        and scope["path"].rstrip("/") == UPLOADS_PATH
    )
