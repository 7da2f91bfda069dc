"""Security headers on every response: CSP, no framing, no sniffing, no referrer leaks.

The dashboard runs no inline script (figures are inert JSON drawn by a static file), so the
policy allows scripts from this origin only. plotly.js sets inline styles on the elements it
draws, hence 'unsafe-inline' for styles (styles cannot run code). /docs (Swagger UI, from the
installed bundle with an external start-up script, app.api.docs_ui) runs under the same policy.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self'; connect-src 'self'; object-src 'none'; "
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
COMMON_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


class SecurityHeaders:
    """ASGI middleware adding the headers above to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = PAGE_POLICY

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                extra = [*COMMON_HEADERS, (b"content-security-policy", policy.encode())]
                headers += [(n, v) for n, v in extra if n not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
