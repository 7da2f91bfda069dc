"""A client slow to send its request is cut off: the head must arrive within the header
deadline, and the body must keep moving within the body deadline; the server answers 408
(when it has not answered yet) and closes. Real server, raw sockets, deadlines set to 1 s."""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from sqlalchemy import Engine

from app.factory import create_app
from app.server_options import uvicorn_options
from app.settings import Settings
from tests.conftest import ProjectFixture, free_port

DEADLINE_S = 1.0
# Cut off within this: the deadline plus a loaded 2-core machine's slack.
CUT_WITHIN_S = DEADLINE_S + 4.0
# What the client would go on doing if nobody cut it off.
GIVE_UP_S = 15.0


@pytest.fixture(scope="module")
def strict_server(engine: Engine) -> Iterator[int]:
    """A real server on loopback whose read deadlines are 1 s; yields its port."""
    port = free_port()
    settings = Settings(header_timeout_s=DEADLINE_S, body_timeout_s=DEADLINE_S)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, engine),
            host="127.0.0.1",
            port=port,
            log_level="critical",
            lifespan="off",
            **uvicorn_options(settings),
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        assert thread.is_alive(), "uvicorn stopped"
        time.sleep(0.02)  # waiting for start-up, not timing anything
    yield port
    server.should_exit = True
    thread.join(timeout=10)


def _trickle(sock: socket.socket, chunks: Iterator[bytes]) -> tuple[bytes, float]:
    """Send one chunk, then wait up to 0.2 s for the server, until it answers or closes:
    (everything it sent, seconds it took). Gives up after GIVE_UP_S."""
    start = time.monotonic()
    received = b""
    sock.settimeout(0.2)
    while time.monotonic() - start < GIVE_UP_S:
        chunk = next(chunks, b"")
        if chunk:
            with contextlib.suppress(OSError):  # the server may have closed already
                sock.sendall(chunk)
        try:
            data = sock.recv(65536)
        except TimeoutError:
            continue
        except ConnectionResetError:
            return received, time.monotonic() - start
        if not data:
            return received, time.monotonic() - start
        received += data
    raise AssertionError(f"still open after {GIVE_UP_S} s, received {received!r}")


def _byte_by_byte(data: bytes) -> Iterator[bytes]:
    for i in range(len(data)):
        yield data[i : i + 1]


def _one_answer(sock: socket.socket) -> bytes:
    """One whole answer (head and content-length body) read from `sock`."""
    sock.settimeout(10)
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(re.search(rb"content-length: (\d+)", head, re.IGNORECASE)[1])  # type: ignore[index]
    while len(body) < length:
        body += sock.recv(65536)
    return data


def test_a_connection_that_sends_nothing_is_closed(strict_server: int) -> None:
    with socket.create_connection(("127.0.0.1", strict_server)) as sock:
        received, took = _trickle(sock, iter(()))
    assert took < CUT_WITHIN_S
    assert received.startswith(b"HTTP/1.1 408 "), received
    assert b'"code":"request-timeout"' in received.replace(b" ", b"")


def test_a_head_sent_slowly_is_cut_at_the_header_deadline(strict_server: int) -> None:
    # One byte every 0.2 s: each byte is progress, but the head as a whole is late.
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"X-Slow: " + b"a" * 200 + b"\r\n\r\n"
    with socket.create_connection(("127.0.0.1", strict_server)) as sock:
        received, took = _trickle(sock, _byte_by_byte(head))
    assert took < CUT_WITHIN_S
    assert received.startswith(b"HTTP/1.1 408 "), received


def test_a_stalled_body_is_cut_at_the_body_deadline(
    strict_server: int, project: ProjectFixture
) -> None:
    head = (
        "POST /api/v1/uploads HTTP/1.1\r\nHost: x\r\n"
        f"Authorization: Bearer {project.upload_token}\r\n"
        "Content-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", strict_server)) as sock:
        received, took = _trickle(sock, iter([head, b"--b\r\n", b"Content-Disposition: "]))
    assert took < CUT_WITHIN_S
    assert received.startswith(b"HTTP/1.1 408 "), received


def test_a_second_request_on_a_kept_connection_has_its_own_deadline(strict_server: int) -> None:
    first = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    with socket.create_connection(("127.0.0.1", strict_server)) as sock:
        sock.sendall(first)
        answer = _one_answer(sock)
        assert answer.startswith(b"HTTP/1.1 200 "), answer
        # Then a head dribbled in: the idle timer stops at its first byte, the deadline not.
        slow = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
        received, took = _trickle(sock, _byte_by_byte(slow))
    assert took < CUT_WITHIN_S
    assert received.startswith(b"HTTP/1.1 408 "), received


def test_a_prompt_request_is_answered(strict_server: int) -> None:
    with socket.create_connection(("127.0.0.1", strict_server)) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received, _ = _trickle(sock, iter(()))
    assert received.startswith(b"HTTP/1.1 200 "), received
