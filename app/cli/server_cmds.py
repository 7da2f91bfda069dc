"""`laptime serve`, `laptime worker`, `laptime migrate`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import click

from app.cli.database import open_database
from app.db.embedded import libpq_url
from app.settings import Settings

if TYPE_CHECKING:
    from ingest.worker import WorkerConfig


def _worker_config(settings: Settings) -> WorkerConfig:
    from ingest.parsers.limits import ParseLimits
    from ingest.worker import WorkerConfig

    return WorkerConfig(
        max_attempts=settings.max_attempts,
        poll_s=settings.worker_poll_s,
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
    import uvicorn

    from app.api.app import create_app
    from app.db.engine import make_engine
    from ingest.worker import run_worker

    settings = Settings()
    with open_database(settings) as url:
        engine = make_engine(url)
        stop = threading.Event()
        thread = None
        if not no_worker:
            config = _worker_config(settings)
            thread = threading.Thread(
                target=run_worker, args=(libpq_url(url), config, stop), daemon=True
            )
            thread.start()
        bind_host = host or settings.host
        bind_port = port or settings.port
        click.echo(f"laptime serving on http://{bind_host}:{bind_port} (API docs at /docs)")
        try:
            uvicorn.run(
                create_app(settings, engine), host=bind_host, port=bind_port, log_level="info"
            )
        finally:
            stop.set()
            if thread is not None:
                thread.join(timeout=10)
            engine.dispose()


@click.command()
def worker() -> None:
    """Run an ingestion worker until interrupted; start as many as you like."""
    from ingest.worker import run_worker

    settings = Settings()
    with open_database(settings) as url:
        config = _worker_config(settings)
        stop = threading.Event()
        click.echo("laptime worker waiting for uploads")
        try:
            run_worker(libpq_url(url), config, stop)
        except KeyboardInterrupt:
            stop.set()


@click.command()
def migrate() -> None:
    """Apply pending database migrations."""
    settings = Settings()
    with open_database(settings):
        click.echo("database is up to date")
