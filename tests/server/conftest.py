"""Fixtures for worker tests: a private database on the shared server, and a Postgres of its
own that tests may stop abruptly and start again (never the session's shared server)."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from app.db.engine import migrate
from tests.conftest import Database

LAPTIME = [sys.executable, "-c", "from app.cli.main import main; main()"]


@pytest.fixture
def private_db(database: Database) -> str:
    """A migrated database of its own (SQLAlchemy URL), so no other test's worker takes its
    uploads and a fault installed in it (a trigger) touches no other test."""
    return make_private_db(database)


def make_private_db(database: Database) -> str:
    """Create and migrate a new database on the session's server; its SQLAlchemy URL."""
    name = f"w_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(database.dsn, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    url = database.url.replace("/postgres?", f"/{name}?")
    migrate(url)
    return url


def sqlalchemy_to_dsn(url: str) -> str:
    """libpq form of a SQLAlchemy URL."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def wait_for(predicate: Callable[[], object], timeout_s: float = 60, what: str = "") -> None:
    """Poll `predicate` until true, failing after `timeout_s` (waiting on other processes)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout_s} s: {what}")
        time.sleep(0.05)


def start_worker(url: str, *extra_env: tuple[str, str]) -> subprocess.Popen[bytes]:
    """A real `laptime worker` process on `url`, polling fast."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAPTIME_")}
    env.update({"DATABASE_URL": url, "LAPTIME_WORKER_POLL_S": "0.2"})
    env.update(dict(extra_env))
    return subprocess.Popen(
        [*LAPTIME, "worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def start_serve(
    url: str,
    *args: str,
    workers_beating: int | None = 1,
    poll_s: float = 0.2,
    env: dict[str, str] | None = None,
) -> tuple[subprocess.Popen[bytes], int]:
    """A real `laptime serve` (with extra `args` and `env` settings) on `url`, once it answers
    and (unless None) `workers_beating` ingest workers beat: (the process, its port). The
    caller stops it."""
    import httpx

    from tests.conftest import free_port

    settings = env or {}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAPTIME_", "PROMETHEUS_"))}
    env.update({"DATABASE_URL": url, "LAPTIME_WORKER_POLL_S": str(poll_s), **settings})
    port = free_port()
    # A file, not a pipe: nobody reads it while serve runs, and a full pipe would block it.
    with tempfile.TemporaryFile() as log:
        serve = subprocess.Popen(
            [*LAPTIME, "serve", "--port", str(port), *args],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=log,
        )

        def healthy() -> bool:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200
            except httpx.TransportError:
                return False

        def beating() -> bool:
            found = scalar(url, "SELECT count(*) FROM worker_heartbeat")
            return workers_beating is None or found == workers_beating

        try:
            wait_for(healthy, 60, "serve answering")
            wait_for(beating, 60, "its workers beating")
        except BaseException:
            serve.kill()
            serve.wait(timeout=10)
            log.seek(0)
            print(log.read().decode(errors="replace")[-4000:])
            raise
    return serve, port


def _pg_bin() -> Path:
    import pgserver._commands

    return Path(pgserver._commands.POSTGRES_BIN_PATH)


@dataclass
class RestartablePostgres:
    """An embedded server run with pg_ctl directly, so a test can crash and restart it."""

    root: Path

    @property
    def pgdata(self) -> Path:
        return self.root / "data"

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@/postgres?host={self.root}"

    @property
    def dsn(self) -> str:
        return sqlalchemy_to_dsn(self.url)

    def _run(self, *args: str, check: bool = True) -> int:
        # The server refuses to run as root; pgserver created an unprivileged user for that.
        user = "pgserver" if os.geteuid() == 0 else None
        return subprocess.run(
            [str(_pg_bin() / args[0]), *args[1:]],
            check=check,
            capture_output=True,
            user=user,
            timeout=60,
        ).returncode

    def init(self) -> None:
        self._run("initdb", "-D", str(self.pgdata), "-U", "postgres", "--auth=trust")

    def start(self) -> None:
        """Start and wait until it accepts connections."""
        self._run(
            "pg_ctl", "-D", str(self.pgdata), "-w", "-l", str(self.root / "log"),
            "-o", f"-h '' -k {self.root}", "start",
        )  # fmt: skip

    def ensure_running(self) -> None:
        """Start it unless it runs (a test that failed while it was down leaves it so)."""
        if self._run("pg_ctl", "-D", str(self.pgdata), "status", check=False) != 0:
            self.start()

    def crash(self) -> None:
        """Stop abruptly: every backend killed, no checkpoint (crash recovery on start)."""
        self._run("pg_ctl", "-D", str(self.pgdata), "-w", "-m", "immediate", "stop")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.pgdata), "-w", "-m", "fast", "stop", check=False)


@pytest.fixture(scope="module")
def restartable_pg() -> Iterator[RestartablePostgres]:
    """A migrated Postgres this module's tests may crash and restart."""
    root = Path(tempfile.mkdtemp(prefix="lt-rpg-"))
    if os.geteuid() == 0:
        from pgserver.utils import ensure_user_exists

        ensure_user_exists("pgserver")
        shutil.chown(root, "pgserver")
    pg = RestartablePostgres(root)
    try:
        pg.init()
        pg.start()
        migrate(pg.url)
        yield pg
    finally:
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


def queue_upload(url: str, body: bytes, *, job: str = "unit") -> int:
    """Queue one upload of `body` in a new project of the database at `url`; its id."""
    from app.db.engine import make_engine
    from app.db.projects import get_project
    from app.db.uploads import IncomingFile, UploadMetadata, insert_upload
    from tests.conftest import make_project

    engine = make_engine(url, pool_size=1)
    try:
        project = make_project(engine)
        with engine.begin() as conn:
            found = get_project(conn, project.slug)
            assert found is not None
            receipt = insert_upload(
                conn,
                found,
                [IncomingFile("r.xml", body)],
                UploadMetadata(job=job),
                idempotency_key=None,
                max_report_bytes=10**9,
            )
    finally:
        engine.dispose()
    return receipt.id


def scalar(url: str, sql: str, *params: object) -> int:
    """One integer from the database at `url` (SQLAlchemy URL)."""
    with psycopg.connect(sqlalchemy_to_dsn(url)) as conn:
        row = conn.execute(sql, params).fetchone()  # type: ignore[arg-type]
    assert row is not None
    return int(row[0])


@contextlib.contextmanager
def serve_app(url: str, **settings: object) -> Iterator[str]:
    """A real uvicorn server (no worker) of the app on the database at `url`; its base URL."""
    import uvicorn

    from app.db.engine import make_engine
    from app.factory import create_app
    from app.settings import Settings
    from tests.conftest import free_port

    engine = make_engine(url)
    app = create_app(Settings(database_url=url, **settings), engine)  # type: ignore[arg-type]
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: server.started, 30, "uvicorn up")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        engine.dispose()
