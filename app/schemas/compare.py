"""The compare answer model."""

from __future__ import annotations

from pydantic import Field

from app.schemas.base import ApiModel


class MeasureModel(ApiModel):
    """A number here against the base's median and MAD-sigma spread; null when the runs did
    not report it (a JUnit file carries no wall)."""

    here: float | None
    base_median: float | None
    base_spread: float | None


class TestMoveModel(ApiModel):
    """A test that moved beyond its noise, or is new (no base median)."""

    nodeid: str
    here_s: float
    base_median_s: float | None
    threshold_s: float | None


class CostModel(MeasureModel):
    """Machine time priced from the project's machine catalogue: this pipeline, the base's
    median and spread per run, and the change (here minus the base median)."""

    delta: float | None
    unit: str = Field(description='"USD" or the catalogue\'s credit name')


class JobOverrunModel(ApiModel):
    """A planned job this pipeline's test moves push past the plan's target wait."""

    index: int
    name: str
    planned_wall_s: float
    added_s: float
    wall_s: float
    overrun_s: float


class PlanFitModel(ApiModel):
    """The project's stored split plan (the one the runs executed, else the newest of their
    cell) with this pipeline's moved tests added to the jobs that run them."""

    plan_id: str
    cell: str
    target_wait_s: float = Field(description="the wait the plan promised: its longest job")
    wait_s: float
    fits: bool
    overruns: list[JobOverrunModel]


class Compare(ApiModel):
    """A pipeline against the base branch's recent runs of the same cell(s)."""

    pipeline: str
    base: str
    cells: list[str]
    base_runs: int
    wall: MeasureModel
    test_time: MeasureModel
    slower: list[TestMoveModel]
    faster: list[TestMoveModel]
    new_tests: list[TestMoveModel]
    removed_tests: list[str]
    new_failures: list[str] = Field(description="real failures: not flaky, not quarantined")
    flaky: list[str] = Field(description="flaky in the base runs or in this pipeline")
    new_flaky: list[str] = Field(description="flaky in this pipeline, not in the base runs")
    quarantined_failures: list[str] = Field(
        description="failures of quarantined tests: reported, not failing the job"
    )
    machine_time: MeasureModel = Field(
        description="per run: the CI job's wall, else the test process's, else its tests' seconds"
    )
    cost: CostModel | None = Field(
        description="null when the catalogue prices not every machine (see unpriced_machines)"
    )
    unpriced_machines: list[str]
    plan_fit: PlanFitModel | None = Field(description="null when the project stored no split plan")
