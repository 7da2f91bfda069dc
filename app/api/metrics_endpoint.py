"""GET /metrics: Prometheus text for the whole deployment.

Open on the service port like /healthz unless LAPTIME_METRICS_TOKEN is set (then it wants
`Authorization: Bearer <that token>`): it names no project and carries no secret, only counts,
durations, route templates, error codes and worker host:pid names. A plain `def`: the queue
gauges are read from the database, in the thread pool.
"""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request, Response

from app.http.deps import EngineDep, SettingsDep, presented_token
from app.http.errors import ApiError
from app.metrics.exposition import CONTENT_TYPE_LATEST, render
from app.services.operations import QueueCollector

router = APIRouter(tags=["health"])


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request, engine: EngineDep, settings: SettingsDep) -> Response:
    """The metrics of every process of this deployment and the queue's gauges."""
    if settings.metrics_token is not None:
        token = presented_token(request)
        if token is None:
            raise ApiError(401, "token-required", "/metrics wants LAPTIME_METRICS_TOKEN")
        expected = settings.metrics_token.get_secret_value().encode()
        if not hmac.compare_digest(token.encode(), expected):
            raise ApiError(401, "token-invalid", "not the metrics token")
    return Response(render([QueueCollector(engine)]), media_type=CONTENT_TYPE_LATEST)
