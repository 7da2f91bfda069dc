"""Probes: /healthz (liveness, no database) and /readyz (able to take and ingest uploads)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from app.http.responses import error_responses, head_error_responses
from app.schemas.health import CheckResult, Liveness, Readiness
from app.services.operations import check_readiness
from app.settings import Settings

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=Liveness, responses=head_error_responses())
def healthz() -> dict[str, str]:
    """Liveness: the process answers. Touches no database, so it stays up during an outage
    (restarting the API would not bring Postgres back)."""
    return {"status": "ok"}


@router.get(
    "/readyz",
    response_model=Readiness,
    # Not ready answers the same report (not the error body), so a probe sees which check.
    responses={
        **head_error_responses(),
        500: error_responses()[500],
        503: {
            "description": "Not ready; `failing` names the checks that failed.",
            "model": Readiness,
        },
    },
)
def readyz(request: Request) -> JSONResponse:
    """Readiness: the database answers, its schema is at the migrations' head, and a worker
    wrote a heartbeat within `ready_heartbeat_max_age_s`. 503 with the failing checks named."""
    settings: Settings = request.app.state.settings
    result = check_readiness(
        request.app.state.engine, max_heartbeat_age_s=settings.ready_heartbeat_max_age_s
    )
    body = Readiness(
        status="ready" if result.ready else "not ready",
        failing=result.failing,
        checks={name: CheckResult(ok=c.ok, detail=c.detail) for name, c in result.checks.items()},
    ).model_dump()
    if result.ready:
        return JSONResponse(body)
    return JSONResponse(body, status_code=503, headers={"Retry-After": "5"})
