"""Did the plans come true: `GET /api/v1/projects/{slug}/recommendations/accuracy` (#18)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field

from analysis.calibration import MIN_SAMPLES, Calibration
from analysis.plan_accuracy import PlanAccuracy
from app.api.deps import ConnDep, ReadProject
from app.api.errors import ApiError
from app.api.params import Text
from app.services.plan_accuracy import PlanNotFound, accuracy_report
from app.services.plan_store import CALIBRATION_APPLIED

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["recommendations"])

# Most plans one answer compares (each with every pipeline that ran it).
MAX_PLANS = 100


class _Model(BaseModel):
    # A field the route writes but the model lacks is an error, never silently dropped.
    model_config = ConfigDict(extra="forbid")


class ErrorBody(_Model):
    """Every error answer: a stable code (docs/errors.md) and what went wrong."""

    code: str
    detail: Any


class Comparison(_Model):
    """A predicted figure and its measurement; error = predicted - measured, in % of measured
    (positive: the plan said longer). Measured is null until every needed job reported."""

    predicted: float | None
    measured: float | None
    error: float | None
    error_pct: float | None


class PredictedJob(_Model):
    """One job as the plan predicted it when handed out."""

    index: int = Field(description="1-based: the jobs that run it upload label shard=I/N")
    name: str
    wall_s: float
    tests_s: float = Field(description="every test's seconds, before dividing by workers")
    setup_s: float | None = Field(description="wall - tests / workers")
    workers: int
    machine: str | None
    cost: float | None
    n_tests: int
    members: list[str] = Field(description="what the job runs (the first ones of a long list)")
    members_total: int
    parts: dict[str, float] = Field(description="the model's named parts, when it gave them")


class JobAccuracy(_Model):
    """One planned job in one pipeline, against the run that executed it (run_id null: none)."""

    index: int
    name: str
    run_id: int | None
    machine: str | None
    workers: int
    wall_s: Comparison
    tests_s: Comparison
    setup_s: Comparison
    cost: Comparison


class PipelineAccuracy(_Model):
    """One execution of a plan (the runs of one pipeline, else one commit)."""

    pipeline: str
    started_at: datetime | None
    complete: bool = Field(description="every planned job reported a wall")
    jobs: list[JobAccuracy]
    wait_s: Comparison = Field(description="the longest job")
    machine_s: Comparison = Field(description="the sum of the jobs")
    cost: Comparison
    mean_abs_error_pct: float | None = Field(description="mean |job wall error %|")
    mean_error_pct: float | None = Field(description="mean signed job wall error %")
    unmatched_runs: int = Field(description="runs naming the plan that match none of its jobs")


class PlanAccuracyModel(_Model):
    """A plan as handed out and every pipeline that ran it, newest first."""

    plan_id: str
    kind: Literal["split", "shard"]
    cell: str
    created_at: datetime | None
    jobs: list[PredictedJob]
    predicted_wait_s: float
    predicted_machine_s: float
    predicted_cost: float | None
    pipelines: list[PipelineAccuracy]


class CalibrationModel(_Model):
    """What the project's measured jobs teach the model."""

    setup_factor: float = Field(description="measured / predicted setup (bounded median)")
    test_factor: float = Field(description="measured / predicted test seconds (bounded median)")
    samples: int = Field(description="measured jobs it comes from")
    min_samples: int = Field(description="measured jobs needed before anything is learnt")
    expected_error_pct: float | None = Field(description="80% of jobs within, factors applied")
    raw_error_pct: float | None = Field(description="the same, predictions as made")
    applied: bool = Field(description="whether the recommendations already use the factors")
    text: str


class AccuracyAnswer(_Model):
    """Per plan and pipeline: predicted vs measured wall per job, wait, machine time, cost."""

    plans: list[PlanAccuracyModel]
    calibration: CalibrationModel


def _pct(fraction: float | None) -> float | None:
    return None if fraction is None else round(100 * fraction, 2)


def calibration_model(calibration: Calibration) -> CalibrationModel:
    """The API form of a calibration."""
    return CalibrationModel(
        setup_factor=calibration.setup_factor,
        test_factor=calibration.test_factor,
        samples=calibration.samples,
        min_samples=MIN_SAMPLES,
        expected_error_pct=_pct(calibration.expected_error),
        raw_error_pct=_pct(calibration.raw_error),
        applied=CALIBRATION_APPLIED,
        text=calibration.note(applied=CALIBRATION_APPLIED),
    )


def accuracy_answer(plans: list[PlanAccuracy], calibration: Calibration) -> AccuracyAnswer:
    """The typed answer of the accuracy endpoint (also what the page renders)."""
    return AccuracyAnswer(
        plans=[PlanAccuracyModel.model_validate(p.to_dict()) for p in plans],
        calibration=calibration_model(calibration),
    )


_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": text}
    for status, text in (
        (401, "no token, or an unknown one (`token-required`, `token-invalid`)"),
        (403, "the token's scope or project does not allow this (`token-scope`)"),
        (404, "no such project, or no plan `plan` in it (`plan-not-found`)"),
        (422, "an invalid parameter (`invalid-field`, `detail` names it)"),
        (429, "too many failed authentications from this address; see Retry-After"),
        (500, "an unexpected server error (`internal-error`); it was logged"),
        (503, "the database is unavailable (`database-unavailable`); retry after Retry-After"),
    )
}


@router.get("/recommendations/accuracy", response_model=AccuracyAnswer, responses=_ERRORS)
def accuracy(
    project: ReadProject,
    conn: ConnDep,
    plan: Annotated[
        Text | None, Query(max_length=500, description="one plan's id (default: the newest)")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PLANS, description="plans, newest first")] = 20,
) -> AccuracyAnswer:
    """Did it come true: each plan's predicted wall per job against the jobs that ran it
    (uploads naming it with `plan_id` or a `plan=<id>` label, matched by `shard=I/N`), per
    pipeline with wait, machine time, cost and the errors; and the calibration they give."""
    try:
        plans, calibration = accuracy_report(conn, project, plan_id=plan, limit=limit)
    except PlanNotFound as exc:
        raise ApiError(404, "plan-not-found", f"no plan {plan!r} in this project") from exc
    return accuracy_answer(plans, calibration)
