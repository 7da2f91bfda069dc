"""The FastAPI application factory."""

from __future__ import annotations

from fastapi import FastAPI
from sqlalchemy import Engine, text

from app.settings import Settings


def create_app(settings: Settings, engine: Engine) -> FastAPI:
    """Build the app around an engine; the caller owns the engine's lifetime."""
    app = FastAPI(
        title="laptime",
        version="0.1.0",
        description="Where your CI time goes, and what to change. REST API v1.",
    )
    app.state.settings = settings
    app.state.engine = engine

    from app.api import projects, recommendations, uploads

    app.include_router(uploads.router)
    app.include_router(projects.router)
    app.include_router(recommendations.router)
    try:
        from app.pages import routes as pages
    except ImportError:  # the dashboard is optional while it is being built
        pages = None  # type: ignore[assignment]
    if pages is not None:
        pages.mount(app)

    @app.get("/healthz", tags=["health"])
    def healthz() -> dict[str, str]:
        """Liveness and database reachability."""
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        return {"status": "ok"}

    return app
