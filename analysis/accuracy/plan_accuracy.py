"""Did the plan come true: each plan's predicted jobs against the runs that executed it.

A run executed a plan when its upload named it (`plan_id`, or a `plan=<id>` label). It is the
plan's job I when its `shard` label says `I/N` (or `I`) with N the plan's job count, else the
planned job of its own job name. The runs of one execution are grouped by pipeline (else by
commit, else each run alone); a job run twice in one pipeline counts its latest run.

Errors are predicted - measured: positive means the plan said longer than it took; the
percentage is of the measured value (what "within 10% of measured" means).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.accuracy.plan_record import PlanRecord, PredictedJob

# The runs frame's columns this module reads.
RUN_COLUMNS = (
    "run_id",
    "plan_id",
    "pipeline",
    "commit",
    "job",
    "labels",
    "started_at",
    "wall_s",
    "test_s",
    "xdist_workers",
    "machine",
)


@dataclass(frozen=True)
class Comparison:
    """A predicted figure, its measurement (None when not measured) and the error."""

    predicted: float | None
    measured: float | None

    @property
    def error(self) -> float | None:
        """predicted - measured."""
        if self.predicted is None or self.measured is None:
            return None
        return self.predicted - self.measured

    @property
    def error_pct(self) -> float | None:
        """The error as a percentage of the measured value (None when that is 0 or unknown)."""
        error = self.error
        if error is None or self.measured is None or self.measured <= 0:
            return None
        return 100.0 * error / self.measured


@dataclass(frozen=True)
class JobAccuracy:
    """One planned job in one pipeline: predicted against the run that executed it."""

    index: int
    name: str
    run_id: int | None
    machine: str | None
    wall: Comparison
    tests: Comparison  # seconds of every test (before dividing by workers)
    setup: Comparison  # wall - tests / workers
    cost: Comparison
    workers: int


@dataclass(frozen=True)
class PipelineAccuracy:
    """One execution of a plan: its jobs and, when every job was measured, wait, machine
    time and cost."""

    pipeline: str
    started_at: pd.Timestamp | None
    complete: bool  # every planned job has a measured wall
    jobs: tuple[JobAccuracy, ...]
    wait: Comparison
    machine: Comparison
    cost: Comparison
    mean_abs_error_pct: float | None  # mean of |job wall error %| over measured jobs
    mean_error_pct: float | None  # mean signed job wall error %
    unmatched_runs: int  # runs naming the plan that match none of its jobs


@dataclass(frozen=True)
class PlanAccuracy:
    """A plan and every pipeline that ran it, newest first."""

    plan: PlanRecord
    pipelines: tuple[PipelineAccuracy, ...]


@dataclass(frozen=True)
class JobSample:
    """One measured job of a plan: the pair calibration learns from."""

    predicted_wall_s: float
    predicted_setup_s: float | None
    predicted_tests_s: float
    measured_wall_s: float
    measured_tests_s: float | None
    workers: int
    # The calibration the plan already applied (its parts say): ratios are relative to it.
    setup_factor: float = 1.0
    test_factor: float = 1.0


def shard_index(labels: Mapping[str, str], jobs: int) -> int | None:
    """The 1-based job index of a `shard` label (`I/N` or `I`); None when absent, malformed
    or naming another job count."""
    raw = str(labels.get("shard", "")).strip()
    if not raw:
        return None
    index_text, _, total_text = raw.partition("/")
    try:
        index = int(index_text)
        total = int(total_text) if total_text else jobs
    except ValueError:
        return None
    return index if total == jobs and 1 <= index <= jobs else None


def _pipeline_key(run: Mapping[str, Any]) -> str:
    if isinstance(run.get("pipeline"), str) and run["pipeline"]:
        return str(run["pipeline"])
    if isinstance(run.get("commit"), str) and run["commit"]:
        return f"commit {run['commit']}"
    return f"run {run['run_id']}"


def _number(value: Any) -> float | None:
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


def _job_of(run: Mapping[str, Any], plan: PlanRecord) -> PredictedJob | None:
    labels = run.get("labels") if isinstance(run.get("labels"), Mapping) else {}
    index = shard_index(labels or {}, len(plan.jobs))
    if index is not None:
        return next((job for job in plan.jobs if job.index == index), None)
    by_name = [job for job in plan.jobs if job.name == run.get("job")]
    return by_name[0] if len(by_name) == 1 else None


def _price(prices: Mapping[str, float] | None, machine: str | None) -> float | None:
    return prices.get(machine) if prices and machine else None


def _job_accuracy(
    job: PredictedJob, run: Mapping[str, Any] | None, prices: Mapping[str, float] | None
) -> JobAccuracy:
    wall = _number(run.get("wall_s")) if run else None
    tests = _number(run.get("test_s")) if run else None
    workers = max(int(_number(run.get("xdist_workers")) or 1), 1) if run else job.workers
    setup = None if wall is None or tests is None else max(wall - tests / workers, 0.0)
    machine = (run.get("machine") if run else None) or job.machine
    price = _price(prices, machine)
    return JobAccuracy(
        index=job.index,
        name=job.name,
        run_id=int(run["run_id"]) if run else None,
        machine=machine,
        wall=Comparison(job.wall_s, wall),
        tests=Comparison(job.tests_s, tests),
        setup=Comparison(job.setup_s, setup),
        cost=Comparison(job.cost, None if wall is None or price is None else wall / 60 * price),
        workers=workers,
    )


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _pipeline(
    plan: PlanRecord, name: str, runs: pd.DataFrame, prices: Mapping[str, float] | None
) -> PipelineAccuracy:
    latest: dict[int, Mapping[str, Any]] = {}
    unmatched = 0
    for record in runs.sort_values(["started_at", "run_id"]).to_dict("records"):
        run = {str(k): v for k, v in record.items()}
        job = _job_of(run, plan)
        if job is None:
            unmatched += 1
        else:
            latest[job.index] = run
    jobs = tuple(_job_accuracy(job, latest.get(job.index), prices) for job in plan.jobs)
    walls = [j.wall.measured for j in jobs]
    complete = bool(jobs) and all(w is not None for w in walls)
    measured = [w for w in walls if w is not None]
    costs = [j.cost.measured for j in jobs]
    errors = [j.wall.error_pct for j in jobs if j.wall.error_pct is not None]
    started = runs["started_at"].min() if len(runs) else None
    return PipelineAccuracy(
        pipeline=name,
        started_at=None if started is None or pd.isna(started) else pd.Timestamp(started),
        complete=complete,
        jobs=jobs,
        wait=Comparison(plan.wait_s, max(measured) if complete else None),
        machine=Comparison(plan.machine_s, sum(measured) if complete else None),
        cost=Comparison(
            plan.cost,
            sum(c for c in costs if c is not None)
            if complete and all(c is not None for c in costs)
            else None,
        ),
        mean_abs_error_pct=_mean([abs(e) for e in errors]),
        mean_error_pct=_mean(errors),
        unmatched_runs=unmatched,
    )


def plan_accuracy(
    plans: Sequence[PlanRecord],
    runs: pd.DataFrame,
    *,
    price_per_min: Mapping[str, float] | None = None,
) -> list[PlanAccuracy]:
    """Per plan, per pipeline that ran it (newest first): predicted vs measured per job,
    wait (longest job), machine time (sum) and cost (when every job is priced)."""
    out = []
    for plan in plans:
        own = runs[runs["plan_id"] == plan.id] if len(runs) else runs
        keys = own.apply(lambda r: _pipeline_key(r.to_dict()), axis=1) if len(own) else None
        pipelines = (
            [_pipeline(plan, str(key), group, price_per_min) for key, group in own.groupby(keys)]
            if keys is not None
            else []
        )
        pipelines.sort(key=lambda p: p.started_at or pd.Timestamp.min.tz_localize("UTC"))
        out.append(PlanAccuracy(plan, tuple(reversed(pipelines))))
    return out


def job_samples(accuracy: Sequence[PlanAccuracy]) -> list[JobSample]:
    """Every measured job of every plan: what calibration learns from."""
    samples = []
    for plan in accuracy:
        parts = {job.index: job.parts for job in plan.plan.jobs}
        for pipeline in plan.pipelines:
            for job in pipeline.jobs:
                if job.wall.measured is None or job.wall.predicted is None:
                    continue
                applied = parts.get(job.index, {})
                samples.append(
                    JobSample(
                        predicted_wall_s=job.wall.predicted,
                        predicted_setup_s=job.setup.predicted,
                        predicted_tests_s=job.tests.predicted or 0.0,
                        measured_wall_s=job.wall.measured,
                        measured_tests_s=job.tests.measured,
                        workers=job.workers,
                        setup_factor=applied.get("setup_factor", 1.0),
                        test_factor=applied.get("test_factor", 1.0),
                    )
                )
    return samples
