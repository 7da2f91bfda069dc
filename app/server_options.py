"""How uvicorn is configured to serve laptime: one place for `laptime serve` and the tests.

Header lines over MAX_HEADER_BYTES are answered 431, a request target (path and query) over
MAX_TARGET_BYTES 414, by app.http.header_limit. For that answer to reach the client, h11 must
first read the whole head: its own limit (16 KiB by default) makes it drop the connection
mid-upload, which the client sees as a reset. So h11 buffers up to HEAD_BUFFER_BYTES per
connection; a head past even that is answered 400 and closed by uvicorn. A request whose
head or body is too slow in coming gets 408 (app.http.read_deadlines).
"""

from __future__ import annotations

from typing import Any

from app.http.header_limit import MAX_HEADER_BYTES, MAX_TARGET_BYTES
from app.http.read_deadlines import deadline_protocol
from app.settings import Settings

# Largest head h11 reads before giving up on the connection: a 1 MiB header (what a proxy or
# a broken client may send) gets its 431. Each connection may buffer this much, so it stays
# small: 1,000 idle connections half-way through a head hold at most ~1 GiB.
HEAD_BUFFER_BYTES = MAX_TARGET_BYTES + MAX_HEADER_BYTES + 1024


def uvicorn_options(settings: Settings | None = None) -> dict[str, Any]:
    """Keyword arguments for uvicorn.Config / uvicorn.run besides app, host and port: h11
    with the read deadlines of `settings` (app.http.read_deadlines; defaults when None)."""
    settings = settings or Settings()
    http = deadline_protocol(
        header_timeout_s=settings.header_timeout_s, body_timeout_s=settings.body_timeout_s
    )
    return {"http": http, "h11_max_incomplete_event_size": HEAD_BUFFER_BYTES}
