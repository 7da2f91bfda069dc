"""Requests wait for a database connection in the event loop, never in a worker thread.

A route's transaction is opened in one worker thread and its body runs in another. With more
requests than the pool has connections, every thread could be waiting for a connection held
by a request whose body waits for a thread: nothing moved until the pool's timeout answered
503 (200 queue nodes claiming at once got no batch in two minutes). So a request first takes
one of the pool's slots here, asynchronously, and only then asks the pool in a thread.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio import Semaphore
from anyio.lowlevel import RunVar
from fastapi import Request
from sqlalchemy import Engine

from app.db.engine import pool_capacity

# One semaphore per engine and event loop (a semaphore belongs to the loop it waits in).
_SLOTS: RunVar[dict[int, Semaphore]] = RunVar("laptime_connection_slots")


def _slots(engine: Engine) -> Semaphore:
    try:
        by_engine = _SLOTS.get()
    except LookupError:
        by_engine = {}
        _SLOTS.set(by_engine)
    slots = by_engine.get(id(engine))
    if slots is None:
        slots = by_engine[id(engine)] = Semaphore(pool_capacity(engine))
    return slots


@asynccontextmanager
async def connection_slot(engine: Engine) -> AsyncIterator[None]:
    """Hold one of `engine`'s pool slots: inside, a checkout does not wait for another request."""
    async with _slots(engine):
        yield


async def hold_connection_slot(request: Request) -> AsyncIterator[None]:
    """Dependency: a slot of the app's pool for the route's whole run (a route that opens
    its transactions itself, after slow work)."""
    async with connection_slot(request.app.state.engine):
        yield
