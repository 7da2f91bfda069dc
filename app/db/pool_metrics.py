"""Database pool use of each web process: connections checked out, and the pool's capacity.

Kept by SQLAlchemy's pool events (a counter bump per checkout and checkin, no query); summed
over the live processes sharing PROMETHEUS_MULTIPROC_DIR ("livesum").
"""

from __future__ import annotations

from typing import Any

from prometheus_client import Gauge
from sqlalchemy import Engine, QueuePool, event

from app.db.engine import pool_capacity

POOL_IN_USE = Gauge(
    "laptime_db_pool_in_use",
    "Database connections checked out of the web processes' pools.",
    multiprocess_mode="livesum",
)
POOL_CAPACITY = Gauge(
    "laptime_db_pool_capacity",
    "Connections the web processes' pools may open (pool size + overflow).",
    multiprocess_mode="livesum",
)


def _checked_out(*_: Any) -> None:
    POOL_IN_USE.inc()


def _checked_in(*_: Any) -> None:
    POOL_IN_USE.dec()


def instrument_pool(engine: Engine) -> None:
    """Count `engine`'s pool use (once per engine, however many apps share it)."""
    if event.contains(engine, "checkout", _checked_out):
        return
    event.listen(engine, "checkout", _checked_out)
    event.listen(engine, "checkin", _checked_in)
    if isinstance(engine.pool, QueuePool):
        POOL_CAPACITY.inc(pool_capacity(engine))
