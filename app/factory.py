"""The FastAPI application factory."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI, Request
from fastapi.responses import Response
from fastapi.routing import APIRoute
from sqlalchemy import Engine

from analysis.errors import AnswerError
from app.api.accuracy import router as accuracy_router
from app.api.changes import router as changes_router
from app.api.compare import router as compare_router
from app.api.docs_ui import mount_docs
from app.api.flaky import router as flaky_router
from app.api.health import router as health_router
from app.api.metrics_endpoint import router as metrics_router
from app.api.openapi_doc import install_openapi
from app.api.projects import router as projects_router
from app.api.quarantine import router as quarantine_router
from app.api.recommendations import router as recommendations_router
from app.api.webhooks import router as webhooks_router
from app.db.pool_metrics import instrument_pool
from app.http.errors import answer_error_response, install_error_handlers
from app.http.frame_budget import apply_frame_budget
from app.http.header_limit import HeaderLimit
from app.http.request_observer import RequestObserver
from app.pages.common import answer_error_page
from app.pages.routes import mount as mount_pages
from app.services.read_warmer import start_read_warmer
from app.settings import Settings
from app.uploads.guard import UploadGuard
from app.uploads.outcomes import UploadOutcomes
from app.uploads.routes import router as uploads_router
from figures.theme import warm_up as warm_up_figures

API_PREFIX = "/api/"


def _answer_error(request: Request, exc: Exception) -> Response:
    """A question the data cannot answer: JSON for the API, the error page for the pages."""
    assert isinstance(exc, AnswerError)
    if request.url.path.startswith(API_PREFIX):
        return answer_error_response(exc)
    return answer_error_page(request, exc)


def create_app(settings: Settings, engine: Engine) -> FastAPI:
    """Build the app around an engine; the caller owns the engine's lifetime."""
    app = FastAPI(
        title="laptime",
        version="0.1.0",
        description="Where your CI time goes, and what to change. REST API v1.",
        lifespan=_lifespan,
        # /docs is served by app.api.docs_ui from the installed bundle, not from a CDN.
        docs_url=None,
        redoc_url=None,
        # One schema per model: a field with a default is optional in answers as in requests
        # (answers leave unset fields out, see app.http.responses.answers).
        separate_input_output_schemas=False,
        # operationId = the route function's name (`create_upload`, `rollups`): what a
        # generated client calls its functions. Names are unique (a test checks).
        generate_unique_id_function=_operation_id,
    )
    app.state.settings = settings
    app.state.engine = engine
    install_error_handlers(app)
    # Domain errors are mapped once, here: each carries its status and code.
    app.add_exception_handler(AnswerError, _answer_error)
    app.add_middleware(UploadGuard, max_upload_bytes=settings.max_upload_bytes)
    app.add_middleware(HeaderLimit)

    app.include_router(health_router)
    app.include_router(metrics_router)
    app.include_router(uploads_router)
    app.include_router(projects_router)
    app.include_router(recommendations_router)
    app.include_router(accuracy_router)
    app.include_router(compare_router)
    app.include_router(flaky_router)
    app.include_router(quarantine_router)
    app.include_router(changes_router)
    app.include_router(webhooks_router)
    mount_docs(app)
    install_openapi(app)
    mount_pages(app)
    # Outermost (added last): they see every answer, the guards' refusals included.
    app.add_middleware(UploadOutcomes)
    app.add_middleware(RequestObserver)
    instrument_pool(engine)
    apply_frame_budget(engine, settings)

    return app


def _operation_id(route: APIRoute) -> str:
    return route.name


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    settle_startup_heap()
    warmer = start_read_warmer(app.state.engine, app.state.settings)
    try:
        yield
    finally:
        if warmer is not None:
            # Joining a thread blocks: not on the event loop.
            await asyncio.to_thread(warmer.stop)


def settle_startup_heap() -> None:
    """Exempt what start-up made (modules, classes, functions, plotly's validators) from the
    cyclic garbage collector. Otherwise every full collection walks those ~160,000 objects,
    100+ ms landing on whichever request triggers it; they live as long as the process."""
    warm_up_figures()
    gc.collect()
    gc.freeze()
