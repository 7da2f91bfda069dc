"""Answers of the probes."""

from __future__ import annotations

from typing import Literal

from app.schemas.base import ApiModel


class Liveness(ApiModel):
    """The process answers."""

    status: Literal["ok"]


class CheckResult(ApiModel):
    """One readiness check."""

    ok: bool
    detail: str


class Readiness(ApiModel):
    """Readiness, the same body for 200 (ready) and 503 (not ready)."""

    status: Literal["ready", "not ready"]
    failing: list[str]
    checks: dict[str, CheckResult]
