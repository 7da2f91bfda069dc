"""431 for a request whose head (request line + headers) is over MAX_HEADER_BYTES."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from app.api.errors import error_response
from app.server_options import MAX_HEADER_BYTES


class HeaderLimit:
    """Pure ASGI middleware: refuse oversized heads before any route or dependency runs."""

    def __init__(self, app: ASGIApp, max_bytes: int = MAX_HEADER_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or _head_bytes(scope) <= self.max_bytes:
            await self.app(scope, receive, send)
            return
        answer = error_response(
            431,
            "headers-too-large",
            f"request headers are over {self.max_bytes} bytes",
            headers={"Connection": "close"},
        )
        await answer(scope, receive, send)


def _head_bytes(scope: Scope) -> int:
    """Bytes of the head as sent: path, query string and every `name: value` line."""
    size = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
    return size + sum(len(name) + len(value) + 4 for name, value in scope["headers"])
