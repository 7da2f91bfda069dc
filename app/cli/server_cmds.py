"""`laptime serve`, `laptime worker`, `laptime migrate`."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

from app.cli.database import open_database
from app.db.embedded import libpq_url
from app.logs import configure_logging, uvicorn_logging
from app.metrics.process_dir import drop_empty_setting, shared_metrics_dir
from app.settings import Settings

if TYPE_CHECKING:
    from ingest.worker import WorkerConfig


def _worker_config(settings: Settings) -> WorkerConfig:
    from ingest.parsers.limits import ParseLimits
    from ingest.worker import WorkerConfig

    return WorkerConfig(
        max_attempts=settings.max_attempts,
        poll_s=settings.worker_poll_s,
        heartbeat_s=settings.worker_heartbeat_s,
        lease_s=settings.worker_lease_s,
        limits=ParseLimits(
            max_decompressed_bytes=settings.max_report_bytes,
        ),
    )


@click.command()
@click.option("--host", default=None, help="Interface to bind (default 127.0.0.1).")
@click.option("--port", default=None, type=int, help="Port (default 8000).")
@click.option("--no-worker", is_flag=True, help="Serve the API only; run `laptime worker` apart.")
def serve(host: str | None, port: int | None, no_worker: bool) -> None:
    """Run the web app and API (and an ingestion worker) on the configured database."""
    settings = Settings()
    configure_logging(settings)
    # Before anything imports prometheus_client: the worker child's counts reach /metrics.
    with shared_metrics_dir():
        _serve(settings, host or settings.host, port or settings.port, no_worker)


def _serve(settings: Settings, bind_host: str, bind_port: int, no_worker: bool) -> None:
    import uvicorn

    from app.api.app import create_app
    from app.cli.worker_process import SupervisedWorker
    from app.db.engine import make_engine

    with open_database(settings) as url:
        engine = make_engine(url)
        worker_child = None if no_worker else SupervisedWorker(url)
        config = uvicorn.Config(
            create_app(settings, engine),
            host=bind_host,
            port=bind_port,
            # In-flight requests get this long after SIGTERM; the whole stop stays under 10 s.
            timeout_graceful_shutdown=5,
            **uvicorn_logging(settings),
        )
        server = _server(config, on_exit=worker_child.begin_stop if worker_child else None)
        click.echo(f"laptime serving on http://{bind_host}:{bind_port} (API docs at /docs)")
        try:
            if worker_child is not None:
                worker_child.start()
            server.run()
        finally:
            if worker_child is not None:
                worker_child.stop(timeout_s=settings.worker_stop_grace_s + 2)
            engine.dispose()


def _server(config: Any, on_exit: Callable[[], None] | None) -> Any:
    """uvicorn's Server, also telling the worker to stop the moment a signal arrives, so the
    worker's rollback and the server's graceful shutdown overlap instead of adding up."""
    import uvicorn

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if on_exit is not None:
                on_exit()
            super().handle_exit(sig, frame)

    return Server(config)


@click.command()
@click.option("--no-migrate", is_flag=True, hidden=True, help="The caller migrated already.")
@click.option(
    "--exit-with-parent", type=int, default=None, hidden=True, help="Stop when this pid is gone."
)
def worker(no_migrate: bool, exit_with_parent: int | None) -> None:
    """Run an ingestion worker until SIGTERM/Ctrl-C; start as many as you like.

    It waits out database outages (reconnecting with backoff) and never exits on them. On
    SIGTERM it finishes the current ingest if that takes under `worker_stop_grace_s`, else
    rolls it back; a second signal rolls back at once.
    """
    drop_empty_setting()  # before anything imports prometheus_client
    from ingest.worker import ShutdownRequested, run_worker

    settings = Settings()
    configure_logging(settings)
    if settings.worker_metrics_port is not None:
        from app.metrics.exposition import serve_metrics

        serve_metrics(settings.worker_metrics_port, host=settings.host)
    with open_database(settings, run_migrations=False) as url:
        config = _worker_config(settings)
        stop = threading.Event()
        restore = _stop_on_signals(stop, grace_s=settings.worker_stop_grace_s)
        if exit_with_parent is not None:
            _watch_parent(exit_with_parent, stop)
        try:
            if not no_migrate:
                _migrate_when_reachable(url, stop)
            click.echo("laptime worker waiting for uploads")
            run_worker(libpq_url(url), config, stop)
        except ShutdownRequested:
            pass
        finally:
            restore()


def _migrate_when_reachable(url: str, stop: threading.Event) -> None:
    """Migrate, waiting (with backoff) for a database that is down when the worker starts."""
    from sqlalchemy.exc import OperationalError

    from app.db.engine import migrate
    from ingest.failures import Backoff

    backoff = Backoff()
    while not stop.is_set():
        try:
            migrate(url)
            return
        except OperationalError as exc:
            delay = backoff.next_delay()
            reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
            click.echo(f"database unavailable ({reason}); retrying in {delay:.1f} s", err=True)
            stop.wait(delay)


def _stop_on_signals(stop: threading.Event, *, grace_s: float) -> Callable[[], None]:
    """SIGTERM/SIGINT set `stop`; an ingest still running `grace_s` later is abandoned (rolled
    back) by raising ShutdownRequested in the main thread. Returns a function undoing this."""
    from ingest.worker import ShutdownRequested

    def request_stop(signum: int, frame: FrameType | None) -> None:
        if stop.is_set():
            raise ShutdownRequested()
        stop.set()
        signal.setitimer(signal.ITIMER_REAL, grace_s)

    def abandon(signum: int, frame: FrameType | None) -> None:
        raise ShutdownRequested()

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGTERM, signal.SIGINT)}
    previous[signal.SIGALRM] = signal.signal(signal.SIGALRM, abandon)

    def restore() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    return restore


def _watch_parent(parent_pid: int, stop: threading.Event) -> None:
    """Stop the worker when its parent (the server) is gone, even if it was SIGKILLed."""

    def watch() -> None:
        while not stop.wait(1.0):
            if os.getppid() != parent_pid:
                os.kill(os.getpid(), signal.SIGTERM)
                return

    threading.Thread(target=watch, name="laptime-parent-watch", daemon=True).start()


@click.command()
def migrate() -> None:
    """Apply pending database migrations."""
    settings = Settings()
    with open_database(settings):
        click.echo("database is up to date")
