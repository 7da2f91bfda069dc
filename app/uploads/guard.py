"""ASGI guard in front of `POST /api/v1/uploads`: token and size are checked before the body.

Without it the multipart parser receives the whole body (spooling files past 1 MB to disk)
before the route can look at the token or the size: 1 GiB with no token took 8 s and 1 GB of
temp files to answer 401. Here the token and `Content-Length` are checked first, and the
body's bytes are counted as they stream in (chunked uploads carry no length) and the request
is cut off with 413 past the limit.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.connection_slots import connection_slot
from app.http.deps import grant_of, presented_token, record_noted_auth_failure
from app.http.errors import DATABASE_DOWN, ApiError, database_unavailable, error_response
from app.http.upload_path import is_upload_post
from app.project_records import TokenGrant

# Room for the form's text fields and the multipart framing on top of the files' bytes.
FORM_ALLOWANCE_BYTES = 1024 * 1024
# Where the guard leaves the grant it resolved, so the route does not look the token up again.
GRANT_STATE_KEY = "upload_grant"


class UploadGuard:
    """Refuse uploads without a valid upload token or with too large a body, unread."""

    def __init__(self, app: ASGIApp, *, max_upload_bytes: int) -> None:
        self.app = app
        self.max_body_bytes = max_upload_bytes + FORM_ALLOWANCE_BYTES
        self.max_upload_bytes = max_upload_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not is_upload_post(scope):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refusal = self._refuse_length(request)
        if refusal is None:
            refusal, grant = await self._authorize(request)
        if refusal is not None:
            # The body stays unread: closing the connection after the answer keeps the server
            # from draining (or the client from pushing) the rest of it.
            refusal.headers["Connection"] = "close"
            await refusal(scope, receive, send)
            return
        scope.setdefault("state", {})[GRANT_STATE_KEY] = grant
        await self._pass_counted(scope, receive, send)

    def _too_large(self) -> Response:
        return error_response(
            413,
            "upload-too-large",
            f"the upload exceeds {self.max_upload_bytes} bytes; raise LAPTIME_MAX_UPLOAD_BYTES",
        )

    def _refuse_length(self, request: Request) -> Response | None:
        if presented_token(request) is None:
            return error_response(401, "token-required", "an upload token is required")
        declared = request.headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_body_bytes):
            return self._too_large()
        return None

    async def _authorize(self, request: Request) -> tuple[Response | None, TokenGrant | None]:
        try:
            async with connection_slot(request.app.state.engine):
                grant = await run_in_threadpool(_resolve_grant, request)
        except DATABASE_DOWN:
            return database_unavailable(), None
        except ApiError as exc:
            return error_response(exc.status_code, exc.code, exc.detail, exc.headers), None
        return None, grant

    async def _pass_counted(self, scope: Scope, receive: Receive, send: Send) -> None:
        received = 0
        cut_off = False
        started = False

        async def counted_receive() -> Message:
            nonlocal received, cut_off
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    # Tell the app the client went away: it stops reading and parsing.
                    cut_off = True
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if cut_off:
                return  # the app's answer to the disconnect; ours is the 413 below
            started = True
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except Exception:
            if not cut_off:
                raise
        if cut_off and not started:
            answer = self._too_large()
            answer.headers["Connection"] = "close"
            await answer(scope, receive, send)


def _resolve_grant(request: Request) -> TokenGrant:
    """The upload grant of the request's token (runs in the thread pool: it queries)."""
    try:
        with request.app.state.engine.connect() as conn:
            grant = grant_of(request, conn)
    finally:
        record_noted_auth_failure(request)
    if grant is None:
        raise ApiError(401, "token-required", "an upload token is required")
    if not grant.allows("upload"):
        raise ApiError(403, "token-scope", f"a {grant.scope} token cannot upload")
    return grant
