"""The client-disconnect probe long sync routes poll (app.http.params.ClientGoneDep), on uvicorn."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from fastapi import FastAPI

from app.http.params import ClientGoneDep
from app.server_options import uvicorn_options
from tests.conftest import free_port

# Bounds of the polling loops below (seconds): generous, never a timing claim.
WAIT_S = 20.0


@pytest.fixture(scope="module")
def probe_server() -> Iterator[tuple[int, dict[str, threading.Event]]]:
    """A real server with one sync route that works until its client leaves (or WAIT_S)."""
    app = FastAPI()
    seen = {"started": threading.Event(), "gone": threading.Event()}

    @app.get("/work")
    def work(client_gone: ClientGoneDep) -> dict[str, bool]:
        seen["started"].set()
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            if client_gone():
                seen["gone"].set()
                return {"gone": True}
            time.sleep(0.01)  # one piece of "work" between checks
        return {"gone": False}

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **uvicorn_options())
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT_S
    while not server.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    yield port, seen
    server.should_exit = True
    thread.join(timeout=10)


def test_a_sync_route_sees_its_client_leave(
    probe_server: tuple[int, dict[str, threading.Event]],
) -> None:
    port, seen = probe_server
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET /work HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert seen["started"].wait(WAIT_S)
        assert not seen["gone"].is_set()  # still connected: the probe says so
    # The client hung up mid-request: the route's next check says it is gone.
    assert seen["gone"].wait(WAIT_S)
