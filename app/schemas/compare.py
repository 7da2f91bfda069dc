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
