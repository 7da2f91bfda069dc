"""Read deadlines for uvicorn's h11 protocol: a slow client cannot hold a connection open.

uvicorn closes a connection idle *between* requests (`timeout_keep_alive`) but waits for a
request's head and body as long as the client likes: a client sending one byte a minute
keeps its connection (and its buffer) for ever. Here the head must be complete within
`header_timeout_s` of the connection or of the request's first byte, and the body must
move at least every `body_timeout_s` (a deadline on progress, not on the whole body: a
500 MB upload on a slow link is fine while it keeps coming). Past either, a request not yet
answered gets 408 `request-timeout`, and the connection is closed.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import h11
from fastapi.responses import JSONResponse
from uvicorn.protocols.http.h11_impl import H11Protocol

from app.http.errors import error_response


def _raw_answer(status_line: bytes, response: JSONResponse) -> bytes:
    """`response` as bytes on the wire (this answer is written below the ASGI app)."""
    head = b"".join(name + b": " + value + b"\r\n" for name, value in response.raw_headers)
    return status_line + b"\r\n" + head + b"\r\n" + bytes(response.body)


_TIMEOUT_ANSWER = _raw_answer(
    b"HTTP/1.1 408 Request Timeout",
    error_response(
        408,
        "request-timeout",
        "the request did not arrive in time",
        headers={"Connection": "close"},
    ),
)


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and a body-progress deadline."""

    def __init__(
        self, *args: Any, header_timeout_s: float = 10.0, body_timeout_s: float = 30.0, **kw: Any
    ) -> None:
        super().__init__(*args, **kw)
        self.header_timeout_s = header_timeout_s
        self.body_timeout_s = body_timeout_s
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout_s)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        waiting_head = self.conn.their_state is h11.IDLE
        if waiting_head and self._deadline is None:
            # The first byte of a request on a kept connection: its head's deadline starts.
            self._arm(self.header_timeout_s)
        super().data_received(data)
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            # The head is complete (or the body moved): the next bytes are due within this.
            self._arm(self.body_timeout_s)
        elif state is not h11.IDLE:
            self._disarm()  # the request is complete (or the connection is over)

    def _arm(self, delay_s: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(delay_s, self._on_deadline)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _on_deadline(self) -> None:
        """Too slow: 408 unless an answer has begun, then close."""
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.SEND_BODY and self.flow.read_paused:
            # Reading is paused because the app has not taken the body yet: not the
            # client's delay. Look again later.
            self._arm(self.body_timeout_s)
            return
        cycle = self.cycle
        answered = (
            cycle is not None and cycle.response_started and self.conn.their_state is not h11.IDLE
        )
        if cycle is not None and not cycle.response_complete:
            # The app's receive() sees a disconnect, and its late answer goes nowhere.
            cycle.disconnected = True
            cycle.message_event.set()
        if not answered:
            self.transport.write(_TIMEOUT_ANSWER)
        self.transport.close()


def deadline_protocol(*, header_timeout_s: float, body_timeout_s: float) -> Any:
    """The protocol factory uvicorn takes as `http=` (picklable for `--workers N`)."""
    return functools.partial(
        DeadlineH11Protocol, header_timeout_s=header_timeout_s, body_timeout_s=body_timeout_s
    )
