"""No route runs on the event loop: every endpoint is a plain `def`, which FastAPI runs in the
thread pool, so a database wait or a CPU-heavy step in one request never stalls the others
(an `async def` upload route froze the whole server)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Iterator
from typing import Any

from fastapi.routing import APIRoute
from sqlalchemy import create_engine

from app.factory import create_app
from app.settings import Settings


def api_routes(routes: Iterable[Any]) -> Iterator[APIRoute]:
    """Every APIRoute, through included routers (wrapped in recent FastAPI) and mounts."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        inner = getattr(getattr(route, "original_router", None), "routes", None)
        yield from api_routes(inner or getattr(route, "routes", None) or ())


def test_every_endpoint_is_synchronous() -> None:
    url = "postgresql+psycopg://nobody@127.0.0.1:1/none"  # never connected to
    app = create_app(Settings(database_url=url), create_engine(url))
    routes = list(api_routes(app.routes))
    assert len(routes) > 10  # the whole app was built, pages included
    coroutines = [r.path for r in routes if inspect.iscoroutinefunction(r.endpoint)]
    assert coroutines == []
