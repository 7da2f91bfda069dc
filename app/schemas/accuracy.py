"""Answer models of the accuracy endpoint: predicted vs measured per plan, pipeline, job."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

import pandas as pd
from pydantic import Field

from analysis.accuracy.calibration import MIN_SAMPLES, Calibration
from analysis.accuracy.plan_accuracy import (
    Comparison as DomainComparison,
)
from analysis.accuracy.plan_accuracy import (
    JobAccuracy as DomainJob,
)
from analysis.accuracy.plan_accuracy import (
    PipelineAccuracy as DomainPipeline,
)
from analysis.accuracy.plan_accuracy import PlanAccuracy
from analysis.accuracy.plan_record import PredictedJob as DomainPredictedJob
from app.schemas.base import ApiModel


class Comparison(ApiModel):
    """A predicted figure and its measurement; error = predicted - measured, in % of measured
    (positive: the plan said longer). Measured is null until every needed job reported."""

    predicted: float | None
    measured: float | None
    error: float | None
    error_pct: float | None

    @classmethod
    def of(cls, c: DomainComparison) -> Comparison:
        """The answer form of a domain comparison."""
        return cls(predicted=c.predicted, measured=c.measured, error=c.error, error_pct=c.error_pct)


class PredictedJob(ApiModel):
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

    @classmethod
    def of(cls, job: DomainPredictedJob) -> PredictedJob:
        """The answer form of a planned job: its fields one for one."""
        return cls.model_validate(job, from_attributes=True)


class JobAccuracy(ApiModel):
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

    @classmethod
    def of(cls, job: DomainJob) -> JobAccuracy:
        """The answer form of one job's comparison."""
        return cls(
            index=job.index,
            name=job.name,
            run_id=job.run_id,
            machine=job.machine,
            workers=job.workers,
            wall_s=Comparison.of(job.wall),
            tests_s=Comparison.of(job.tests),
            setup_s=Comparison.of(job.setup),
            cost=Comparison.of(job.cost),
        )


class PipelineAccuracy(ApiModel):
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

    @classmethod
    def of(cls, p: DomainPipeline) -> PipelineAccuracy:
        """The answer form of one pipeline's comparison."""
        return cls(
            pipeline=p.pipeline,
            started_at=_utc(p.started_at),
            complete=p.complete,
            jobs=[JobAccuracy.of(job) for job in p.jobs],
            wait_s=Comparison.of(p.wait),
            machine_s=Comparison.of(p.machine),
            cost=Comparison.of(p.cost),
            mean_abs_error_pct=p.mean_abs_error_pct,
            mean_error_pct=p.mean_error_pct,
            unmatched_runs=p.unmatched_runs,
        )


class PlanAccuracyModel(ApiModel):
    """A plan as handed out and every pipeline that ran it, newest first."""

    plan_id: str
    kind: Literal["split", "shard", "queue"]
    cell: str
    created_at: datetime | None
    jobs: list[PredictedJob]
    predicted_wait_s: float
    predicted_machine_s: float
    predicted_cost: float | None
    pipelines: list[PipelineAccuracy]

    @classmethod
    def of(cls, accuracy: PlanAccuracy) -> PlanAccuracyModel:
        """The answer form of a plan and its pipelines."""
        plan = accuracy.plan
        return cls(
            plan_id=plan.id,
            kind=plan.kind,
            cell=plan.cell,
            created_at=_utc(plan.created_at),
            jobs=[PredictedJob.of(job) for job in plan.jobs],
            predicted_wait_s=plan.wait_s,
            predicted_machine_s=plan.machine_s,
            predicted_cost=plan.cost,
            pipelines=[PipelineAccuracy.of(p) for p in accuracy.pipelines],
        )


class CalibrationModel(ApiModel):
    """What the project's measured jobs teach the model."""

    setup_factor: float = Field(description="measured / predicted setup (bounded median)")
    test_factor: float = Field(description="measured / predicted test seconds (bounded median)")
    samples: int = Field(description="measured jobs it comes from")
    min_samples: int = Field(description="measured jobs needed before anything is learnt")
    expected_error_pct: float | None = Field(description="80% of jobs within, factors applied")
    raw_error_pct: float | None = Field(description="the same, predictions as made")
    text: str


class AccuracyAnswer(ApiModel):
    """Per plan and pipeline: predicted vs measured wall per job, wait, machine time, cost."""

    plans: list[PlanAccuracyModel]
    calibration: CalibrationModel


def _utc(stamp: pd.Timestamp | None) -> datetime | None:
    return None if stamp is None else stamp.to_pydatetime()


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
        text=calibration.note(),
    )


def accuracy_answer(plans: list[PlanAccuracy], calibration: Calibration) -> AccuracyAnswer:
    """The typed answer of the accuracy endpoint (also what the page renders)."""
    return AccuracyAnswer(
        plans=[PlanAccuracyModel.of(p) for p in plans],
        calibration=calibration_model(calibration),
    )
