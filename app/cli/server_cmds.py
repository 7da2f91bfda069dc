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
from app.metrics.process_dir import drop_empty_setting
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
        batch_uploads=settings.worker_batch_uploads,
        parse_ahead=settings.worker_parse_ahead,
        limits=ParseLimits(
            max_decompressed_bytes=settings.max_report_bytes,
        ),
    )


@click.command()
@click.option("--host", default=None, help="Interface to bind (default 127.0.0.1).")
@click.option("--port", default=None, type=int, help="Port (default 8000).")
@click.option(
    "--workers",
    "web_processes",
    type=click.IntRange(1, 64),
    default=1,
    show_default=True,
    help="Web processes sharing the port (uvicorn workers).",
)
@click.option(
    "--ingest-workers",
    type=click.IntRange(0, 64),
    default=1,
    show_default=True,
    help="Supervised ingest worker processes (0: run `laptime worker` apart).",
)
@click.option("--no-worker", is_flag=True, help="Same as --ingest-workers 0.")
def serve(
    host: str | None, port: int | None, web_processes: int, ingest_workers: int, no_worker: bool
) -> None:
    """Run the web app and API (and ingest workers) on the configured database."""
    from app.cli.metrics_dir import shared_metrics_dir

    drop_empty_setting()
    settings = Settings()
    configure_logging(settings)
    ingest_workers = 0 if no_worker else ingest_workers
    # Before anything imports prometheus_client: it picks its multi-process mode at import.
    with (
        shared_metrics_dir(needed=web_processes > 1 or ingest_workers > 0),
        open_database(settings) as url,
    ):
        bind = (host or settings.host, port or settings.port)
        _serve_on(url, settings, bind, web_processes=web_processes, ingest_workers=ingest_workers)


def _serve_on(
    url: str,
    settings: Settings,
    bind: tuple[str, int],
    *,
    web_processes: int,
    ingest_workers: int,
) -> None:
    """Start the ingest workers, then serve until a signal; stop everything on the way out."""
    import uvicorn

    from app.cli.worker_process import SupervisedWorker
    from app.server_options import uvicorn_options

    children = [SupervisedWorker(url) for _ in range(ingest_workers)]

    def begin_stop() -> None:
        for child in children:
            child.begin_stop()

    # In-flight requests get this long after SIGTERM; the whole stop stays under 10 s.
    host, port = bind
    common: dict[str, Any] = {
        "host": host,
        "port": port,
        "timeout_graceful_shutdown": 5,
        **uvicorn_options(settings),
        # Every web process logs as settings say; the request line replaces the access log.
        **uvicorn_logging(settings),
    }
    click.echo(
        f"laptime serving on http://{host}:{port} (API docs at /docs) with "
        f"{web_processes} web and {ingest_workers} ingest worker processes"
    )
    engine = None
    try:
        for child in children:
            child.start()
        if web_processes == 1:
            from app.db.engine import make_engine
            from app.factory import create_app

            engine = make_engine(url)
            config = uvicorn.Config(create_app(settings, engine), **common)
            _server(config, on_exit=begin_stop).run()
        else:
            from app.cli.web_processes import WEB_APP, run_web_processes

            # The web processes are spawned afresh and read their database from here, and
            # their number to take their share of the deployment's budgets.
            os.environ["DATABASE_URL"] = url
            os.environ["LAPTIME_WEB_PROCESSES"] = str(web_processes)
            config = uvicorn.Config(WEB_APP, factory=True, workers=web_processes, **common)
            run_web_processes(config, on_exit=begin_stop)
    finally:
        for child in children:
            child.stop(timeout_s=settings.worker_stop_grace_s + 2)
        if engine is not None:
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
            from app.cli.delivery_thread import start_deliveries

            start_deliveries(url, settings, stop)
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
