"""Token and size are checked before the upload's body is read.

Raw sockets: the client sends only the request head and reads the answer, which proves the
server answered without the body (it never had it).
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from sqlalchemy import Engine

from app.factory import create_app
from app.settings import Settings
from tests.conftest import Database, LiveServer, ProjectFixture
from tests.server.app_server import serve

GIB = 1 << 30
SMALL_LIMIT = 256 * 1024
BOUNDARY = "laptimeboundary"


def _connect(base: str) -> socket.socket:
    parts = urlsplit(base)
    sock = socket.create_connection((parts.hostname or "", parts.port or 80), timeout=10)
    sock.settimeout(10)
    return sock


def _head(token: str | None, extra: str) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        "POST /api/v1/uploads HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: multipart/form-data; boundary={BOUNDARY}\r\n{auth}{extra}\r\n"
    ).encode()


def _read_answer(sock: socket.socket) -> tuple[int, dict[str, object]]:
    """Status and JSON body of one response (Content-Length framed)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"connection closed before an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.lower().partition(": ")[::2] for line in lines[1:])
    length = int(headers["content-length"])
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk
        body += chunk
    return int(lines[0].split()[1]), json.loads(body[:length])


def _answer_to_head(base: str, token: str | None, extra: str) -> tuple[int, dict[str, object]]:
    with _connect(base) as sock:
        sock.sendall(_head(token, extra))
        return _read_answer(sock)


def test_no_token_is_refused_before_a_gib_body(live_server: LiveServer) -> None:
    status, body = _answer_to_head(live_server.url, None, f"Content-Length: {GIB}\r\n")
    assert status == 401
    assert body["code"] == "token-required"


def test_a_bad_token_is_refused_before_the_body(live_server: LiveServer) -> None:
    status, body = _answer_to_head(live_server.url, "lt_upload_nope", "Content-Length: 5000\r\n")
    assert status == 401
    assert body["code"] == "token-invalid"


def test_a_read_token_cannot_start_an_upload(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    status, body = _answer_to_head(live_server.url, project.read_token, "Content-Length: 5000\r\n")
    assert status == 403
    assert body["code"] == "token-scope"


def test_an_oversize_content_length_is_refused_before_the_body(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    status, body = _answer_to_head(
        live_server.url, project.upload_token, f"Content-Length: {GIB}\r\n"
    )
    assert status == 413
    assert body["code"] == "upload-too-large"


@pytest.fixture
def small_limit_server(database: Database, engine: Engine) -> Iterator[str]:
    settings = Settings(home=database.home, database_url=database.url, max_upload_bytes=SMALL_LIMIT)
    with serve(create_app(settings, engine)) as url:
        yield url


def test_a_chunked_body_is_cut_off_past_the_limit(
    small_limit_server: str, project: ProjectFixture
) -> None:
    part = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="r.xml"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n"
    ).encode()
    chunk = b"x" * 65536
    budget = 64 * SMALL_LIMIT  # far past the limit: the server must stop us long before
    sent = 0
    with _connect(small_limit_server) as sock:
        sock.sendall(_head(project.upload_token, "Transfer-Encoding: chunked\r\n"))
        sock.sendall(b"%x\r\n%s\r\n" % (len(part), part))
        deadline = time.monotonic() + 20
        while sent < budget and time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], 0)
            if readable:
                break  # the server has answered
            try:
                sock.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += len(chunk)
        status, body = _read_answer(sock)
    assert status == 413
    assert body["code"] == "upload-too-large"
    assert sent < budget


def test_an_early_refusal_closes_the_connection(live_server: LiveServer) -> None:
    with _connect(live_server.url) as sock:
        sock.sendall(_head(None, f"Content-Length: {GIB}\r\n"))
        status, _ = _read_answer(sock)
        assert status == 401
        # The server hangs up at once instead of waiting for (and discarding) a GiB.
        sock.settimeout(3)
        assert sock.recv(1) == b""
