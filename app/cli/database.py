"""Opening the database from a CLI command: embedded or DATABASE_URL, migrated."""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from types import FrameType

import click

from app.db.embedded import EmbeddedDatabaseError, database_url
from app.db.engine import migrate
from app.settings import Settings


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # Turning SIGTERM into SystemExit runs the `finally` blocks and atexit hooks that stop
    # the embedded server; the default action would orphan it.
    sys.exit(128 + signum)


@contextlib.contextmanager
def open_database(settings: Settings, *, run_migrations: bool = True) -> Iterator[str]:
    """Yield a migrated database URL; the embedded server stops when the last user exits."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        with database_url(settings) as url:
            if run_migrations:
                migrate(url)
            yield url
    except EmbeddedDatabaseError as exc:
        raise click.ClickException(str(exc)) from exc
