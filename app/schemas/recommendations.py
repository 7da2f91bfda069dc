"""Answers of the recommendation endpoints: split plans, shards, sizing, parametrize, matrix.

Nested parts whose keys depend on the question (the CI config snippets of a plan, a
catalogue's machine entries, the evidence of a matrix verdict) are typed as JSON objects
(`dict[str, Any]`): the schema says "an object" and no more than the answer guarantees.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from analysis.split.options import Granularity, Objective
from app.schemas.base import ApiModel

CONFIG_TEXT = (
    "what to paste, where it applies: runner, github_actions, gitlab_ci, circleci, shell "
    "(pytest: any CI), test_durations (nodeid -> s), selections, files, markers, "
    "marker_expressions; every pytest snippet starts LAPTIME_JOB_STARTED_AT first, installs "
    "the client from LAPTIME_CI_SPEC and runs pytest --laptime-upload, each job with the "
    "stored plan's arguments and LAPTIME_LABELS=plan=<plan_id>,shard=I/N, or with "
    "--laptime-shard=I/N"
)


class LayoutTotals(ApiModel):
    """A layout's wait (longest job), machine time (sum) and cost (when priced)."""

    jobs: int
    wait_s: float
    machine_s: float
    cost: float | None = Field(default=None, description="absent when no price is known")


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


class EstimateSources(ApiModel):
    """Where the per-test durations came from."""

    tests: int
    without_history: int
    by_source: dict[str, int]


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


class Shards(ApiModel):
    """A shard assignment (every shard, or the one asked for)."""

    total: int
    plan_id: str | None = Field(
        description="names the whole assignment, stored by POST (send it with the upload); "
        "null from GET, which stores nothing"
    )
    shards: list[Shard]


class Explosion(ApiModel):
    """A parametrized test function and what its variants cost per run."""

    test: str
    file: str
    classname: str | None
    function: str
    variants: int
    duration_s: float | None
    file_duration_s: float | None
    share_of_file: float | None
    window_s: float | None
    runs: int
    argnames: list[str]
    values: dict[str, list[str]]
    values_source: Literal["plugin", "inferred-from-ids"] | None
    values_note: str | None
    variant_list: list[dict[str, Any]] = Field(description="params, values, median_s, results")


class CoveringRow(ApiModel):
    """One proposed variant."""

    values: list[str]
    params: str | None
    duration_s: float | None
    measured: bool


class CoveringProposal(ApiModel):
    """A covering set for one explosion, the predicted saving and the code to paste."""

    test: str
    strength: int
    argnames: list[str]
    values_source: Literal["plugin", "inferred-from-ids"]
    size: int
    variants: int
    lower_bound: int
    proven_minimal: bool
    method: str
    current_s: float | None
    proposed_s: float | None
    saved_s: float | None
    saved_fraction: float | None
    unmeasured_rows: int
    rows: list[CoveringRow]
    code: str


class ExplosionAdvice(ApiModel):
    """An explosion and its proposal (null, with a note, when none can be made)."""

    explosion: Explosion
    proposal: CoveringProposal | None
    note: str | None = None


class Parametrize(ApiModel):
    """The costliest parametrize explosions and their covering sets."""

    strength: int
    explosions: list[ExplosionAdvice]


class MatrixVerdict(ApiModel):
    """Whether one group needs every value of one label dimension, with the evidence."""

    group_by: Literal["file", "marker"]
    group: str
    dimension: str
    values: list[str]
    verdict: Literal["keep", "reduce", "insufficient-data"]
    recommendation: str
    compared: int
    outcome_differs: int
    duration_differs: int
    threshold: float
    keep_value: str | None
    dropped_s: float
    window_days: int | None
    dropped_s_per_day: float | None
    evidence: list[dict[str, Any]] = Field(
        description="kind, test, context, fixed_labels, and passed_on/failed_on (outcome) or "
        "median_s/ratio (duration)"
    )


class Matrix(ApiModel):
    """A verdict per (group, label dimension)."""

    group_by: Literal["file", "marker"]
    verdicts: list[MatrixVerdict]


class PeakTest(ApiModel):
    """A test among a job's memory peaks."""

    nodeid: str
    peak_rss_mib: float


class MachineFit(ApiModel):
    """The sizing answer for one job."""

    job: str
    members: list[str]
    machine: str | None
    machine_known: bool
    workers: int
    parallel: bool
    test_s: float
    overhead_s: float
    longest_test_s: float
    memory_source: Literal["per-test", "job"] | None
    memory_basis: str | None
    peak_rss_mib: float | None
    job_peak_rss_mib: float | None
    need_mib: float | None
    peak_tests: list[PeakTest]
    wall_s: float
    recommended: str | None
    recommended_workers: int | None
    recommended_wall_s: float | None
    cost_per_run: float | None
    recommended_cost_per_run: float | None
    runs_per_day: float | None
    cost_per_month: float | None
    recommended_cost_per_month: float | None
    saving_per_run: float | None
    saving_per_month: float | None
    advice: str
    notes: list[str]
    max_cores_used: float = Field(description="most cores a test used (CPU time / wall)")
    parallel_fraction: float = Field(description="Amdahl parallel fraction fitted")
    predictions: list[dict[str, Any]] = Field(
        description="per machine type: machine, vcpus, memory_gib, workers, predicted_wall_s, "
        "need_mib, fits_memory, within_wait, cost_per_run"
    )


class SizingReport(ApiModel):
    """Every job's fit, the wait before and after, and the monthly totals."""

    catalogue: str
    unit: str = Field(description='"USD" or the catalogue\'s credit name')
    headroom: float
    wait_target_s: float
    wait_s: float
    wait_after_s: float
    cost_per_month: float | None
    cost_per_month_after: float | None
    saving_per_month: float | None
    unknown_machines: list[str]
    warnings: list[str]
    jobs: list[MachineFit]


class Machines(ApiModel):
    """Sizing today, and after a split when one was asked for (`split_jobs`)."""

    cell: str
    cells: list[str]
    today: SizingReport
    split_verdict: Literal["split", "keep", "not_worth_it", "refused"] | None = Field(
        default=None, description="present when split_jobs was given"
    )
    complete: bool | None = Field(default=None, description="present when split_jobs was given")
    after_split: SizingReport | None = Field(
        default=None, description="present when the split's verdict is split"
    )


class CatalogueDoc(ApiModel):
    """A machine catalogue."""

    name: str
    vendor: str
    unit: str
    credit_name: str
    credit_price_usd: float | None
    source: str
    as_of: str | None
    machines: list[dict[str, Any]] = Field(
        description="name, vcpus, memory_gib, os, arch, source, as_of, and where known "
        "usd_per_min, credits_per_min, executor, gpu, specs_source, aliases"
    )


class ProjectCatalogue(ApiModel):
    """The catalogue a project is priced from."""

    name: str | None
    custom_toml: str | None
    catalogue: CatalogueDoc | None
    shipped: list[str]


class CatalogueSet(ApiModel):
    """The catalogue now declared."""

    name: str | None
    custom: bool
