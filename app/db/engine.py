"""Engine creation, migrations, and the transaction scope the edges own."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.pool import QueuePool

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def make_engine(url: str, *, pool_size: int = 5) -> Engine:
    """A pooled engine on the psycopg 3 driver."""
    return create_engine(url, pool_size=pool_size, max_overflow=10, pool_pre_ping=True)


def pool_capacity(engine: Engine) -> int:
    """How many connections `engine` hands out at once (its pool's size and overflow)."""
    pool = engine.pool
    if isinstance(pool, QueuePool):
        return pool.size() + max(pool._max_overflow, 0)
    return 1


def alembic_config(url: str) -> Config:
    """An Alembic Config pointing at our migrations, with the URL set programmatically."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def migrate(url: str) -> None:
    """Apply every pending migration (safe to call from several processes at once)."""
    command.upgrade(alembic_config(url), "head")


@contextlib.contextmanager
def transaction(engine: Engine) -> Iterator[Connection]:
    """One transaction: committed when the block ends, rolled back when it raises."""
    with engine.begin() as conn:
        yield conn
