"""Engine creation, migrations, and the transaction scope the edges own."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def make_engine(url: str, *, pool_size: int = 5) -> Engine:
    """A pooled engine on the psycopg 3 driver."""
    return create_engine(url, pool_size=pool_size, max_overflow=10, pool_pre_ping=True)


def alembic_config(url: str) -> Config:
    """An Alembic Config pointing at our migrations, with the URL set programmatically."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def migrate(url: str) -> None:
    """Apply every pending migration (safe to call from several processes at once)."""
    # "heads": parallel branches' migrations (each revising "0001" until re-chained) all apply.
    command.upgrade(alembic_config(url), "heads")


@contextlib.contextmanager
def transaction(engine: Engine) -> Iterator[Connection]:
    """One transaction: committed when the block ends, rolled back when it raises."""
    with engine.begin() as conn:
        yield conn
