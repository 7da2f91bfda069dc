"""What the request observer (latency metric, upload outcomes, one log line) costs a request.

    .venv/bin/python -m bench.bench_request_observer [--rounds 7] [--requests 1000]

Calls the real app's ASGI entry for `GET /healthz` (the cheapest route: the worst case for a
per-request cost) with and without the two middlewares, in alternating rounds of one run, log
lines written as JSON to a temporary file; prints the median ratio with / without, at log
level INFO (a line per request) and WARNING (the metric alone). The line replaces uvicorn's
access log line, which cost about as much.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import MutableMapping
from typing import Any, cast

from fastapi import FastAPI

from app.db.engine import make_engine
from app.factory import create_app
from app.http.request_observer import RequestObserver
from app.logs import configure_logging
from app.settings import Settings
from app.uploads.outcomes import UploadOutcomes

SCOPE: dict[str, Any] = {
    "type": "http",
    "asgi": {"version": "3.0"},
    "http_version": "1.1",
    "method": "GET",
    "scheme": "http",
    "path": "/healthz",
    "raw_path": b"/healthz",
    "query_string": b"",
    "root_path": "",
    "headers": [(b"host", b"bench")],
    "client": ("127.0.0.1", 1),
    "server": ("127.0.0.1", 80),
}


async def _receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b""}


async def _send(message: MutableMapping[str, Any]) -> None:
    return None


async def _seconds_per_request(app: FastAPI, requests: int) -> float:
    started = time.perf_counter()
    for _ in range(requests):
        await app(dict(SCOPE), _receive, _send)
    return (time.perf_counter() - started) / requests


def _apps() -> tuple[FastAPI, FastAPI]:
    # /healthz touches no database: the engine never connects.
    engine = make_engine("postgresql+psycopg://bench@127.0.0.1:1/bench")
    observed = create_app(Settings(), engine)
    bare = create_app(Settings(), engine)
    mine: tuple[object, ...] = (RequestObserver, UploadOutcomes)
    bare.user_middleware = [m for m in bare.user_middleware if cast(object, m.cls) not in mine]
    return bare, observed


async def _ratio(rounds: int, requests: int) -> float:
    bare, observed = _apps()
    await _seconds_per_request(bare, 200)  # warm both
    await _seconds_per_request(observed, 200)
    ratios = []
    for _ in range(rounds):
        without = await _seconds_per_request(bare, requests)
        with_it = await _seconds_per_request(observed, requests)
        ratios.append(with_it / without)
    return statistics.median(ratios)


def main() -> None:
    """Print the median ratio at each log level."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=1000)
    args = parser.parse_args()
    out = sys.stdout
    with tempfile.TemporaryFile("w") as sink:
        sys.stderr = sink  # the log handler writes here, as to a log collector
        try:
            for level in ("INFO", "WARNING"):
                configure_logging(Settings(log_format="json", log_level=level))
                ratio = asyncio.run(_ratio(args.rounds, args.requests))
                out.write(f"GET /healthz with / without the observer, log level {level}: ")
                out.write(f"{ratio:.2f}x\n")
        finally:
            sys.stderr = sys.__stderr__
    out.flush()


if __name__ == "__main__":
    main()
