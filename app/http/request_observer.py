"""Pure ASGI middleware: one log line and one latency observation per HTTP request.

Outermost in the stack, so it times and sees everything, the guards' early refusals included.
It only wraps `send` to read the status; the body streams through untouched (the upload
guard's streaming and cut-off keep working) and nothing here blocks: a clock read, a metric
update and a log call per request.

Latency is labelled by route template (`/api/v1/uploads/{upload_id}`, never the raw path), so
the series stay as few as the routes; a path no route matches (and a head refused before
routing with 414 or 431) is `unmatched`, a method outside the standard ones `OTHER`.
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import secrets
import time

from prometheus_client import Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.http.upload_path import UPLOADS_PATH, is_upload_post
from app.logs import REQUEST_ID

log = logging.getLogger("laptime.request")

REQUEST_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
HTTP_SECONDS = Histogram(
    "laptime_http_request_duration_seconds",
    "Seconds from a request's arrival to the end of its answer, by method, route template "
    "and status.",
    ["method", "route", "status"],
    buckets=REQUEST_BUCKETS_S,
)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"
REQUEST_ID_HEADER = b"x-request-id"
# A caller's (a proxy's) request id is kept when it is this plain; anything else is replaced,
# so a log line never carries a forged or oversized id.
_GOOD_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
# New ids: a random prefix per process and a counter, unique without a syscall per request.
_ID_PREFIX = secrets.token_hex(4)
_ID_COUNTER = itertools.count(1)
# Status logged and counted when the client left before any answer started.
CLIENT_GONE = 499
_PATH_LOG_CHARS = 200


class RequestObserver:
    """Time, count and log every HTTP request; tag its answer with `x-request-id`."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        exchange = _Exchange(scope)
        token = REQUEST_ID.set(exchange.request_id)

        async def observed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                exchange.status = int(message["status"])
                header = (REQUEST_ID_HEADER, exchange.request_id.encode())
                message = {**message, "headers": [*message.get("headers", ()), header]}
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                # Recorded before the last bytes go out: a client that reads the answer and
                # then scrapes /metrics finds its request counted.
                exchange.finish()
            await send(message)

        try:
            await self.app(scope, receive, observed_send)
        except Exception:
            # ServerErrorMiddleware (outside us) answers 500 and logs the traceback. A
            # cancellation (the client left) is no Exception: it stays CLIENT_GONE.
            exchange.status = exchange.status or 500
            raise
        finally:
            exchange.finish()
            REQUEST_ID.reset(token)


class _Exchange:
    """One request's observation, recorded once."""

    def __init__(self, scope: Scope) -> None:
        self.scope = scope
        self.started = time.perf_counter()
        self.request_id = _request_id(scope)
        self.status = 0
        self.recorded = False

    def finish(self) -> None:
        """Observe the latency and write the request's line (the first call only)."""
        if self.recorded:
            return
        self.recorded = True
        seconds = time.perf_counter() - self.started
        route = route_label(self.scope)
        method = str(self.scope["method"])
        method = method if method in METHODS else "OTHER"
        status = self.status or CLIENT_GONE
        path = _printable(str(self.scope["path"]))
        HTTP_SECONDS.labels(method, route, str(status)).observe(seconds)
        log.info(
            "%s %s %s %.3f s", method, path, status, seconds,
            extra={
                "event": "request",
                "request_id": self.request_id,
                "method": method,
                "route": route,
                "path": path,
                "status": status,
                "seconds": round(seconds, 6),
                "client": _client(self.scope),
            },
        )  # fmt: skip


def route_label(scope: Scope) -> str:
    """The template of the route that served the request, or `unmatched`."""
    route = scope.get("route")
    template = getattr(route, "path_format", None) or getattr(route, "path", None)
    if template:
        return str(template)
    # The upload guard refuses (401, 403, 413) before routing: still that route's requests.
    # A 414 or 431 refused before routing, like a path no route matches, is `unmatched`.
    return UPLOADS_PATH if is_upload_post(scope) else UNMATCHED


def _request_id(scope: Scope) -> str:
    for name, value in scope["headers"]:
        if name == REQUEST_ID_HEADER:
            given = bytes(value).decode("latin-1")
            if _GOOD_REQUEST_ID.fullmatch(given):
                return given
            break
    # The pid too: a server that forks its workers gives each the same prefix.
    return f"{_ID_PREFIX}-{os.getpid():x}-{next(_ID_COUNTER):x}"


def _client(scope: Scope) -> str | None:
    client = scope.get("client")
    return str(client[0]) if client else None


def _printable(text: str) -> str:
    """The path as a log field: bounded, control characters escaped (no forged lines)."""
    cut = str(text)[:_PATH_LOG_CHARS]
    if cut.isprintable():
        return cut
    return cut.encode("unicode_escape").decode("ascii")
