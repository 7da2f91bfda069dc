"""The compare answer model."""

from __future__ import annotations

import math

from pydantic import Field

from analysis.compare.cost import CostComparison
from analysis.compare.plan_fit import PlanFit
from analysis.compare.runs import Measure, TestMove
from app.schemas.base import ApiModel
from app.services.compare import CompareAnswer


def _known(value: float) -> float | None:
    """Unknown (NaN) travels as null, never as a number JSON cannot carry."""
    return None if math.isnan(value) else value


class MeasureModel(ApiModel):
    """A number here against the base's median and MAD-sigma spread; null when the runs did
    not report it (a JUnit file carries no wall)."""

    here: float | None
    base_median: float | None
    base_spread: float | None

    @classmethod
    def of(cls, measure: Measure) -> MeasureModel:
        """The wire form of a measure."""
        return cls(
            here=_known(measure.here),
            base_median=_known(measure.base_median),
            base_spread=_known(measure.base_spread),
        )


class TestMoveModel(ApiModel):
    """A test that moved beyond its noise, or is new (no base median)."""

    nodeid: str
    here_s: float
    base_median_s: float | None
    threshold_s: float | None

    @classmethod
    def of(cls, move: TestMove) -> TestMoveModel:
        """The wire form of a moved test."""
        return cls(
            nodeid=move.nodeid,
            here_s=move.here_s,
            base_median_s=move.base_median_s,
            threshold_s=move.threshold_s,
        )


class CostModel(MeasureModel):
    """Machine time priced from the project's machine catalogue: this pipeline, the base's
    median and spread per run, and the change (here minus the base median)."""

    delta: float | None
    unit: str = Field(description='"USD" or the catalogue\'s credit name')

    @classmethod
    def of_priced(cls, priced: CostComparison) -> CostModel | None:
        """The priced side of a comparison (None when some machine has no price)."""
        if priced.cost is None:
            return None
        cost = priced.cost
        return cls(
            here=_known(cost.here),
            base_median=_known(cost.base_median),
            base_spread=_known(cost.base_spread),
            delta=_known(cost.delta),
            unit=priced.unit or "",
        )


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

    @classmethod
    def of(cls, fit: PlanFit) -> PlanFitModel:
        """The wire form of a plan's fit."""
        return cls(
            plan_id=fit.plan_id,
            cell=fit.cell,
            target_wait_s=fit.target_wait_s,
            wait_s=fit.wait_s,
            fits=fit.fits,
            overruns=[
                JobOverrunModel(
                    index=o.index,
                    name=o.name,
                    planned_wall_s=o.planned_wall_s,
                    added_s=o.added_s,
                    wall_s=o.wall_s,
                    overrun_s=o.overrun_s,
                )
                for o in fit.overruns
            ],
        )


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

    @classmethod
    def of(cls, answer: CompareAnswer) -> Compare:
        """The wire form of a comparison, built once for the API, the CLI and the PR client."""
        comparison = answer.comparison
        return cls(
            pipeline=answer.pipeline,
            base=answer.base,
            cells=list(answer.cells),
            base_runs=comparison.base_runs,
            wall=MeasureModel.of(comparison.wall),
            test_time=MeasureModel.of(comparison.test_time),
            slower=[TestMoveModel.of(m) for m in comparison.slower],
            faster=[TestMoveModel.of(m) for m in comparison.faster],
            new_tests=[TestMoveModel.of(m) for m in comparison.new_tests],
            removed_tests=list(comparison.removed_tests),
            new_failures=list(comparison.new_failures),
            flaky=list(comparison.flaky),
            new_flaky=list(comparison.new_flaky),
            quarantined_failures=list(comparison.quarantined_failures),
            machine_time=MeasureModel.of(answer.priced.machine_time),
            cost=CostModel.of_priced(answer.priced),
            unpriced_machines=list(answer.priced.unpriced_machines),
            plan_fit=None if answer.plan_fit is None else PlanFitModel.of(answer.plan_fit),
        )
