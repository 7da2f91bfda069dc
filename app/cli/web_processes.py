"""Several web processes on one port: `laptime serve --workers N` (uvicorn's supervisor).

Each process is spawned afresh and builds its own app from the environment the parent set
(settings, `DATABASE_URL`), so it needs an import string: `app.cli.web_processes:web_app`.
The processes share nothing but the listening socket and the database: kept frames are keyed
on the project's data version read from the database, so no process answers from frames
another process's ingest made stale (app.services.project_reads).
"""

from __future__ import annotations

import atexit
from collections.abc import Callable
from typing import TYPE_CHECKING

from uvicorn.supervisors import Multiprocess

if TYPE_CHECKING:
    from fastapi import FastAPI
    from uvicorn import Config

WEB_APP = "app.cli.web_processes:web_app"


def web_app() -> FastAPI:
    """The app of one web process, on the database the parent exported as DATABASE_URL."""
    from app.db.engine import make_engine
    from app.factory import create_app
    from app.settings import Settings

    settings = Settings()
    if settings.database_url is None:
        raise RuntimeError("a web process needs DATABASE_URL from `laptime serve`")
    engine = make_engine(settings.database_url)
    atexit.register(engine.dispose)
    return create_app(settings, engine)


class _Supervisor(Multiprocess):
    """uvicorn's supervisor, also calling `on_exit` the moment SIGTERM/SIGINT is handled."""

    def __init__(self, config: Config, on_exit: Callable[[], None] | None) -> None:
        super().__init__(config, sockets=[config.bind_socket()])
        self._on_exit = on_exit

    def _exiting(self) -> None:
        if self._on_exit is not None:
            self._on_exit()

    def handle_term(self) -> None:
        self._exiting()
        super().handle_term()

    def handle_int(self) -> None:
        self._exiting()
        super().handle_int()


def run_web_processes(config: Config, on_exit: Callable[[], None] | None = None) -> None:
    """Serve `config` (an import-string app, `workers` > 1) until SIGTERM/SIGINT; `on_exit`
    runs as the signal is handled so ingest workers stop while the web processes drain."""
    _Supervisor(config, on_exit).run()
