"""Pure ASGI middleware counting `POST /api/v1/uploads` by how the API answered.

received = accepted (202, a new upload queued) + duplicate (200, a repeat) + refused (any
error, by its code) + the requests whose client left before an answer. Read from the answer
itself, so the guard's early refusals and the route's answers are counted in one place. Only
an error's body is looked at (a small JSON object, to read its `code`); bodies stream through.
"""

from __future__ import annotations

import json

from prometheus_client import Counter
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.errors import API_ERROR_CODES
from app.http.upload_path import is_upload_post

UPLOADS_RECEIVED = Counter("laptime_uploads_received", "Upload requests received.")
UPLOADS_ACCEPTED = Counter(
    "laptime_uploads_accepted", "Uploads stored and queued for ingestion (answered 202)."
)
UPLOADS_DUPLICATE = Counter(
    "laptime_uploads_duplicate",
    "Uploads that repeated an earlier one (answered 200; a failed one is re-queued).",
)
UPLOADS_REFUSED = Counter(
    "laptime_uploads_refused",
    "Upload requests answered with an error, by error code (docs/errors.md); `http-<status>` "
    "for an answer without a registered code.",
    ["code"],
)
# An error body larger than this is not ours: not parsed, counted by its status.
_ERROR_BODY_MAX_BYTES = 64 * 1024


class UploadOutcomes:
    """Count upload requests and their outcomes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not is_upload_post(scope):
            await self.app(scope, receive, send)
            return
        UPLOADS_RECEIVED.inc()
        status = 0
        error_body = bytearray()

        async def counted_send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            elif message["type"] == "http.response.body":
                if status >= 400 and len(error_body) <= _ERROR_BODY_MAX_BYTES:
                    error_body.extend(message.get("body", b""))
                if not message.get("more_body"):
                    # Counted before the last bytes go out, so a client sees it counted.
                    count_outcome(status, bytes(error_body))
            await send(message)

        try:
            await self.app(scope, receive, counted_send)
        except Exception:
            if status == 0:
                UPLOADS_REFUSED.labels("internal-error").inc()
            raise


def count_outcome(status: int, error_body: bytes) -> None:
    """Count one answered upload request by its status (and error code)."""
    if status == 202:
        UPLOADS_ACCEPTED.inc()
    elif status == 200:
        UPLOADS_DUPLICATE.inc()
    elif status >= 400:
        UPLOADS_REFUSED.labels(refusal_code(status, error_body)).inc()


def refusal_code(status: int, body: bytes) -> str:
    """The registered error code of an error answer, else `http-<status>` (bounded either way)."""
    try:
        code = json.loads(body).get("code") if len(body) <= _ERROR_BODY_MAX_BYTES else None
    except (ValueError, AttributeError):
        code = None
    return code if code in API_ERROR_CODES else f"http-{status}"
