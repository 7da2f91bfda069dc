"""The FastAPI application factory."""

from __future__ import annotations

import gc
import importlib
import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from sqlalchemy import Engine, text

from app.api.header_limit import HeaderLimit
from app.settings import Settings


def create_app(settings: Settings, engine: Engine) -> FastAPI:
    """Build the app around an engine; the caller owns the engine's lifetime."""
    app = FastAPI(
        title="laptime",
        version="0.1.0",
        description="Where your CI time goes, and what to change. REST API v1.",
        lifespan=_lifespan,
    )
    app.state.settings = settings
    app.state.engine = engine
    app.add_middleware(HeaderLimit)

    from app.api.projects import router as projects_router
    from app.api.recommendations import router as recommendations_router
    from app.api.uploads import router as uploads_router

    app.include_router(uploads_router)
    app.include_router(projects_router)
    app.include_router(recommendations_router)
    if importlib.util.find_spec("app.pages.routes") is not None:
        importlib.import_module("app.pages.routes").mount(app)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        """Liveness and database reachability."""
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return {"status": "ok"}

    return app


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settle_startup_heap()
    yield


def settle_startup_heap() -> None:
    """Exempt what start-up made (modules, classes, functions, plotly's validators) from the
    cyclic garbage collector. Otherwise every full collection walks those ~160,000 objects,
    100+ ms landing on whichever request triggers it; they live as long as the process."""
    if importlib.util.find_spec("dashboards.theme") is not None:
        importlib.import_module("dashboards.theme").warm_up()
    gc.collect()
    gc.freeze()
