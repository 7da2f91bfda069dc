"""A second real uvicorn server for tests that need an app built differently from live_server
(smaller limits, an engine pointing at a dead port, a route that fails on purpose)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import uvicorn
from fastapi import FastAPI

from tests.conftest import free_port


@contextlib.contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """Serve `app` on a loopback port for the block; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="critical", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)  # waiting for start-up, not timing anything
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
