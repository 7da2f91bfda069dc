"""Shared fixtures: a throwaway embedded PostgreSQL per test process, migrated once."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine

# pytester drives the pytest plugin's tests; it must be enabled from the top-level conftest.
pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Database:
    """A migrated throwaway database."""

    url: str  # SQLAlchemy URL
    dsn: str  # libpq URL for psycopg
    home: Path


@pytest.fixture(scope="session")
def database() -> Iterator[Database]:
    """One embedded server per xdist worker; tests isolate by using their own project."""
    from app.db.embedded import database_url, libpq_url
    from app.db.engine import migrate
    from app.settings import Settings

    # Not under pytest's basetemp: that is private to root, and the embedded server runs as
    # an unprivileged user when the tests run as root.
    with tempfile.TemporaryDirectory(prefix="laptime-test-") as raw:
        home = Path(raw)
        settings = Settings(home=home, database_url=None)
        with database_url(settings) as url:
            migrate(url)
            yield Database(url=url, dsn=libpq_url(url), home=home)


@pytest.fixture(scope="session")
def engine(database: Database) -> Iterator[Engine]:
    """A pooled engine on the test database."""
    from app.db.engine import make_engine

    eng = make_engine(database.url)
    yield eng
    eng.dispose()


@dataclass(frozen=True)
class ProjectFixture:
    """A fresh project with one token of each scope."""

    slug: str
    id: int
    upload_token: str
    read_token: str
    admin_token: str


def make_project(engine: Engine, *, public: bool = False) -> ProjectFixture:
    """Create a uniquely named project and its tokens."""
    from app.db.projects import create_project, create_token

    with engine.begin() as conn:
        project = create_project(conn, f"p-{uuid.uuid4().hex[:10]}", public=public)
        tokens = {s: create_token(conn, project, s) for s in ("upload", "read", "admin")}
    return ProjectFixture(
        slug=project.slug,
        id=project.id,
        upload_token=tokens["upload"],
        read_token=tokens["read"],
        admin_token=tokens["admin"],
    )


@pytest.fixture
def project(engine: Engine) -> ProjectFixture:
    """A fresh private project."""
    return make_project(engine)


def compact_rollups(dsn: str, project_id: int) -> int:
    """Add the project's stored runs to the per-test rollups, as the worker does after a
    drain (ingest.rollup_compaction); returns how many runs it added."""
    import psycopg

    from ingest.rollup_compaction import compact_backlog

    with psycopg.connect(dsn) as conn:
        return compact_backlog(conn, projects=[project_id]).runs


def free_port() -> int:
    """An unused TCP port on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The live server's workers refuse reports that inflate past this, so bomb tests stay small.
TEST_MAX_REPORT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class LiveServer:
    """A real uvicorn server (with an in-process worker) on loopback."""

    url: str
    stop_worker: threading.Event


@pytest.fixture(scope="session")
def live_server(database: Database, engine: Engine) -> Iterator[LiveServer]:
    """Serve the real app over HTTP for the whole session."""
    import uvicorn

    from app.factory import create_app
    from app.server_options import uvicorn_options
    from app.settings import Settings
    from ingest.parsers.limits import ParseLimits
    from ingest.worker import WorkerConfig, run_worker

    # Webhook tests register receivers on loopback (and names that resolve nowhere offline).
    settings = Settings(
        home=database.home,
        database_url=database.url,
        worker_poll_s=0.5,
        webhook_allow_private=True,
        # Every test reaches this server from 127.0.0.1 and failures are counted per address
        # in the shared database: one test's wrong tokens (the API fuzzers send hundreds)
        # would refuse every other test for a minute. The budget itself is tested on servers
        # of their own (tests/server/test_auth_rate_limit.py).
        auth_failures=1_000_000,
    )
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, engine),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            **uvicorn_options(),
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    stop = threading.Event()
    worker = threading.Thread(
        target=run_worker,
        args=(
            database.dsn,
            WorkerConfig(
                poll_s=0.5,
                name=f"test-{os.getpid()}",
                limits=ParseLimits(
                    max_decompressed_bytes=TEST_MAX_REPORT_BYTES,
                ),
            ),
            stop,
        ),
        daemon=True,
    )
    worker.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    yield LiveServer(url=f"http://127.0.0.1:{port}", stop_worker=stop)
    stop.set()
    server.should_exit = True
    thread.join(timeout=10)
    worker.join(timeout=10)
