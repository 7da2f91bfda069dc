"""More requests at once than the server has database connections (hundreds of queue nodes
claiming together) all get their answer: a request waits for a connection without holding a
thread that a request already holding a connection needs to run its route."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from sqlalchemy import Engine

from app.db.engine import make_engine
from tests.conftest import ProjectFixture, make_project
from tests.server.conftest import start_serve

# Well past the app's connection pool (15) and the thread pool (40): what exhausted both.
NODES = 200


@pytest.fixture
def serve_port(private_db: str) -> Iterator[tuple[int, Engine]]:
    """A real `laptime serve` (no ingest worker) on a database of its own: (port, engine)."""
    serve, port = start_serve(private_db, "--ingest-workers", "0", workers_beating=None)
    engine = make_engine(private_db, pool_size=1)
    try:
        yield port, engine
    finally:
        engine.dispose()
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=15)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait(timeout=10)


async def _claim_together(
    base: str, project: ProjectFixture, queue_id: int
) -> list[httpx.Response]:
    headers = {"Authorization": f"Bearer {project.upload_token}"}
    limits = httpx.Limits(max_connections=NODES, max_keepalive_connections=NODES)
    async with httpx.AsyncClient(headers=headers, timeout=120, limits=limits) as client:
        return await asyncio.gather(
            *(client.post(f"{base}/{queue_id}/claims", json={"node": str(n)}) for n in range(NODES))
        )


def test_hundreds_of_nodes_claiming_at_once_each_get_a_batch(
    serve_port: tuple[int, Engine],
) -> None:
    port, engine = serve_port
    project = make_project(engine)
    base = f"http://127.0.0.1:{port}/api/v1/projects/{project.slug}/queues"
    collected = [f"t/test_{i // 10:03d}.py::test_{i}" for i in range(4 * NODES)]
    opened = httpx.post(
        base,
        json={"node": "0", "pipeline": "many", "collected": collected, "nodes": NODES},
        headers={"Authorization": f"Bearer {project.upload_token}"},
        timeout=120,
    )
    assert opened.status_code == 200, opened.text
    # A thread of its own: the browser tests' Playwright keeps an event loop running in this
    # worker's main thread for the session, and asyncio.run refuses to start inside it.
    with ThreadPoolExecutor(max_workers=1) as own_loop:
        answers = own_loop.submit(
            asyncio.run, _claim_together(base, project, opened.json()["queue_id"])
        ).result()
    statuses = Counter(
        a.status_code if isinstance(a, httpx.Response) else type(a).__name__ for a in answers
    )
    assert statuses == {200: NODES}, statuses
    batches = [a.json() for a in answers if isinstance(a, httpx.Response)]
    assert Counter(b["state"] for b in batches)["batch"] >= NODES // 2
    handed = [n for b in batches for item in b["items"] for n in item["nodeids"]]
    assert len(handed) == len(set(handed)), "a test was handed to two nodes"
