"""Answers of split planning and sharding, built from the domain's plans and shards (each
model's `of`); the domain keeps full precision, these round for JSON.

The CI config snippets of a plan are typed as a JSON object (`dict[str, Any]`): their keys
depend on the runner and the granularity asked, and the schema says no more than that."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from analysis.accuracy.calibration import Calibration
from analysis.accuracy.host_speed import HostSpeed, stated_error, stated_error_text
from analysis.split.job_model import JobParts as DomainJobParts
from analysis.split.options import Granularity, Objective
from analysis.split.result import EstimateSources as DomainEstimateSources
from analysis.split.result import LayoutTotals as DomainTotals
from analysis.split.result import ParetoRow as DomainParetoRow
from analysis.split.result import PlannedJob as DomainPlannedJob
from analysis.split.result import SplitPlan as DomainSplitPlan
from analysis.split.shards import Shard as DomainShard
from app.schemas.base import ApiModel, rounded
from app.services.recommendations import ShardsAnswer, SplitAnswer

CONFIG_TEXT = (
    "what to paste, where it applies: runner, github_actions, gitlab_ci, circleci, shell "
    "(pytest: any CI), test_durations (nodeid -> s), selections, files, markers, "
    "marker_expressions; every pytest snippet starts LAPTIME_JOB_STARTED_AT first, installs "
    "the client from LAPTIME_CI_SPEC and runs pytest --laptime-upload, each job with the "
    "stored plan's arguments and LAPTIME_LABELS=plan=<plan_id>,shard=I/N, or with "
    "--laptime-shard=I/N"
)


def _cost(cost: float | None) -> dict[str, float]:
    """The `cost` keyword when known: an unknown cost is left out of the answer, never null."""
    return {} if cost is None else {"cost": round(cost, 4)}


def _totals(t: DomainTotals | DomainParetoRow) -> dict[str, float]:
    """Jobs, wait and machine time (and the cost when known) as a layout's answer states them."""
    return {"jobs": t.jobs, "wait_s": round(t.wait_s, 3), "machine_s": round(t.machine_s, 3)} | (
        _cost(t.cost)
    )


class LayoutTotals(ApiModel):
    """A layout's wait (longest job), machine time (sum) and cost (when priced)."""

    jobs: int
    wait_s: float
    machine_s: float
    cost: float | None = Field(default=None, description="absent when no price is known")

    @classmethod
    def of(cls, totals: DomainTotals) -> LayoutTotals:
        """The answer form of a layout's totals."""
        return cls(**_totals(totals))


class JobParts(ApiModel):
    """A job's predicted wall from its parts (docs/planner.md, "The model")."""

    ci_setup_s: float
    startup_s: float
    collect_s: float
    first_use_s: float
    exit_s: float = Field(default=0.0, description="session end to process exit")
    tests_s: float
    wall_s: float
    cpu_share: float | None = Field(description="the CPU share tests were normalised from")
    setup_factor: float
    test_factor: float
    inputs_missing: list[str] = Field(description="model inputs the history lacked")

    @classmethod
    def of(cls, parts: DomainJobParts) -> JobParts:
        """The answer form of a job's parts."""
        return cls(
            ci_setup_s=round(parts.ci_setup_s, 3),
            startup_s=round(parts.startup_s, 3),
            collect_s=round(parts.collect_s, 3),
            first_use_s=round(parts.first_use_s, 3),
            exit_s=round(parts.exit_s, 3),
            tests_s=round(parts.tests_s, 3),
            wall_s=round(parts.wall_s, 3),
            cpu_share=rounded(parts.cpu_share, 3),
            setup_factor=parts.setup_factor,
            test_factor=parts.test_factor,
            inputs_missing=list(parts.inputs_missing),
        )


class PlannedJob(ApiModel):
    """One job of a layout and what it runs."""

    name: str
    members: list[str]
    n_tests: int
    predicted_test_s: float
    overhead_s: float
    workers: int
    machine: str | None
    predicted_wall_s: float
    pytest_args: list[str]
    runner_args: list[str]
    command: str
    cost: float | None = Field(default=None, description="absent when no price is known")
    parts: JobParts | None = Field(default=None, description="absent without a job model")

    @classmethod
    def of(cls, job: DomainPlannedJob) -> PlannedJob:
        """The answer form of a planned job."""
        parts = {} if job.parts is None else {"parts": JobParts.of(job.parts)}
        return cls(
            name=job.name,
            members=list(job.members),
            n_tests=job.n_tests,
            predicted_test_s=round(job.test_s, 3),
            overhead_s=round(job.overhead_s, 3),
            workers=job.workers,
            machine=job.machine,
            predicted_wall_s=round(job.wall_s, 3),
            pytest_args=list(job.pytest_args),
            runner_args=list(job.runner_args),
            command=job.command,
            **_cost(job.cost),
            **parts,
        )


class ParetoRow(ApiModel):
    """The best plan found for one job count."""

    jobs: int
    wait_s: float
    machine_s: float
    lower_bound_wait_s: float
    feasible: bool
    pareto_optimal: bool
    chosen: bool
    best: bool
    cost: float | None = Field(default=None, description="absent when no price is known")

    @classmethod
    def of(cls, row: DomainParetoRow) -> ParetoRow:
        """The answer form of one job count's best plan."""
        return cls(
            lower_bound_wait_s=round(row.lower_bound_wait_s, 3),
            feasible=row.feasible,
            pareto_optimal=row.pareto_optimal,
            chosen=row.chosen,
            best=row.best,
            **_totals(row),
        )


class EstimateSources(ApiModel):
    """Where the per-test durations came from."""

    tests: int
    without_history: int
    by_source: dict[str, int]

    @classmethod
    def of(cls, sources: DomainEstimateSources) -> EstimateSources:
        """The answer form of the estimates' sources: the domain's fields one for one."""
        return cls.model_validate(sources, from_attributes=True)


class ExpectedError(ApiModel):
    """How far this project's measured jobs fell from their plans (the plan's likely error)."""

    error_pct: float | None = Field(
        description="the error to expect: 80% of measured jobs within, never below the "
        "history's host speed spread; null: neither known"
    )
    samples: int = Field(description="measured jobs it comes from")
    calibrated: bool = Field(
        default=False, description="the plan applies factors learnt from measured jobs"
    )
    host_speed_pct: float | None = Field(
        default=None,
        description="how far the history's runs' speed strayed from typical (80% within), "
        "the same tests compared; null: fewer than 2 comparable runs",
    )
    text: str

    @classmethod
    def of(cls, calibration: Calibration, host: HostSpeed | None = None) -> ExpectedError:
        """The error a plan made with `calibration`'s factors can expect; the host's speed
        spread in the history is an error no plan removes."""
        error = stated_error(calibration, host)
        return cls(
            error_pct=rounded(None if error is None else 100 * error, 1),
            samples=calibration.samples,
            # Factors learnt from measured jobs (else 1.0): documented, scripts may key on it.
            calibrated=calibration.expected_error is not None,
            host_speed_pct=None if host is None else round(100 * host.spread, 1),
            text=stated_error_text(calibration, host),
        )


class SplitPlan(ApiModel):
    """A split recommendation for one matrix cell: before, after, verdict, config to copy."""

    cell: str = Field(description="the labels key planned for (the heaviest by default)")
    cells: list[str]
    verdict: Literal["split", "keep", "not_worth_it", "refused"]
    reason: str
    complete: bool = Field(description="false when planning stopped at its time limit")
    objective: Objective
    granularity: Granularity
    budget_s: float | None
    before: LayoutTotals
    after: LayoutTotals
    before_jobs: list[PlannedJob]
    jobs: list[PlannedJob]
    pareto: list[ParetoRow]
    estimates: EstimateSources
    warnings: list[str]
    inputs_missing: list[str] = Field(description="job model inputs the history lacked")
    config: dict[str, Any] = Field(description=CONFIG_TEXT)
    plan_id: str | None = Field(
        default=None,
        description="names the plan stored by POST; jobs send it (plan_id or label "
        "plan=<id>); null from GET, which stores nothing",
    )
    expected_error: ExpectedError | None = None

    @classmethod
    def of(
        cls,
        plan: DomainSplitPlan,
        *,
        cell: str = "",
        cells: Sequence[str] = (),
        config: Mapping[str, Any] | None = None,
        **server: Any,
    ) -> SplitPlan:
        """The answer form of a plan for `cell`; `config` replaces the plan's (labelled with
        the stored plan), `server` sets plan_id and expected_error (a server's answer)."""
        return cls(
            cell=cell,
            cells=list(cells),
            verdict=plan.verdict,
            reason=plan.reason,
            complete=plan.complete,
            objective=plan.objective,
            granularity=plan.granularity,
            budget_s=plan.budget_s,
            before=LayoutTotals.of(plan.before),
            after=LayoutTotals.of(plan.after),
            before_jobs=[PlannedJob.of(job) for job in plan.before_jobs],
            jobs=[PlannedJob.of(job) for job in plan.jobs],
            pareto=[ParetoRow.of(row) for row in plan.pareto],
            estimates=EstimateSources.of(plan.estimate_sources),
            warnings=list(plan.warnings),
            inputs_missing=list(plan.inputs_missing),
            config=dict(plan.config if config is None else config),
            **server,
        )

    @classmethod
    def answer(cls, answer: SplitAnswer) -> SplitPlan:
        """The server's answer: the plan for its cell, the config as handed out, the stored
        plan's id (null from a read) and the error the project's earlier plans had."""
        return cls.of(
            answer.plan,
            cell=answer.cell,
            cells=answer.cells,
            config=answer.config,
            plan_id=answer.plan_id,
            expected_error=ExpectedError.of(answer.calibration, answer.host),
        )


# What `laptime plan --json` leaves out of a SplitPlan: the server's part of the answer.
SERVER_FIELDS = frozenset({"cell", "cells", "plan_id", "expected_error"})


class Shard(ApiModel):
    """One shard: its units, its nodeids, and what its runner takes (when known)."""

    index: int
    members: list[str]
    nodeids: list[str]
    predicted_s: float
    new_tests: list[str] = Field(description="collected tests without history")
    runner: str | None = None
    args: list[str] | None = None
    command: str | None = None

    @classmethod
    def of(cls, shard: DomainShard) -> Shard:
        """The answer form of a shard; runner, args and command only where known."""
        selection = shard.selection
        words = (
            {}
            if selection is None
            else {
                "runner": selection.runner,
                "args": list(selection.args),
                "command": selection.command,
            }
        )
        return cls(
            index=shard.index,
            members=list(shard.members),
            nodeids=list(shard.nodeids),
            predicted_s=round(shard.predicted_s, 3),
            new_tests=list(shard.new_tests),
            **words,
        )


class Shards(ApiModel):
    """A shard assignment (every shard, or the one asked for)."""

    total: int
    plan_id: str | None = Field(
        description="names the whole assignment, stored by POST (send it with the upload); "
        "null from GET, which stores nothing"
    )
    shards: list[Shard]

    @classmethod
    def of(cls, answer: ShardsAnswer) -> Shards:
        """The answer form of a shard assignment."""
        return cls(
            total=answer.total,
            plan_id=answer.plan_id,
            shards=[Shard.of(shard) for shard in answer.shards],
        )
