"""414 for a request target (path + query) over MAX_TARGET_BYTES, 431 for header lines over
MAX_HEADER_BYTES: refused before any route runs."""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from app.http.errors import error_response

# Largest header lines (names and values) the app answers; browsers send < 16 KiB.
MAX_HEADER_BYTES = 64 * 1024
# Largest request target (path and query string) the app answers: every parameter of every
# operation at its schema bound fits (tests/server/test_schema_agrees.py), so a request the
# schema calls valid is never refused for its size.
MAX_TARGET_BYTES = 1024 * 1024


class HeaderLimit:
    """Pure ASGI middleware: refuse oversized heads before any route or dependency runs."""

    def __init__(
        self, app: ASGIApp, max_bytes: int = MAX_HEADER_BYTES, max_target: int = MAX_TARGET_BYTES
    ) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_target = max_target

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _target_bytes(scope) > self.max_target:
            answer = error_response(
                414,
                "uri-too-long",
                f"the request's path and query are over {self.max_target} bytes",
                headers={"Connection": "close"},
            )
        elif _header_bytes(scope) > self.max_bytes:
            answer = error_response(
                431,
                "headers-too-large",
                f"request headers are over {self.max_bytes} bytes",
                headers={"Connection": "close"},
            )
        else:
            await self.app(scope, receive, send)
            return
        await answer(scope, receive, send)


def _target_bytes(scope: Scope) -> int:
    """Bytes of the request target as sent: path and query string."""
    return len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")


def _header_bytes(scope: Scope) -> int:
    """Bytes of the header lines as sent: every `name: value` line."""
    return sum(len(name) + len(value) + 4 for name, value in scope["headers"])
