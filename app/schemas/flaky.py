"""Answer models of the flaky endpoint: flaky tests ranked by cost, cost per file, job, week."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import Field

from analysis.flaky.cost import CostRow
from analysis.flaky.report import FlakyTestCost, empty_cost
from app.schemas.base import ApiModel
from app.services.flaky import FlakyRead


class FlakyCost(ApiModel):
    """What flakes cost under one key: machine seconds by kind, developer wait, dollars."""

    key: str = Field(description="the test, file, job, week (Monday) or `total`")
    tests: int = Field(description="flaky tests that cost something here")
    reruns: int = Field(description="flaky results that passed on a retry inside the job")
    job_retries: int = Field(description="jobs retried after failing on flaky tests only")
    pipeline_reruns: int = Field(description="passed jobs run again by a re-run pipeline")
    rerun_s: float = Field(description="machine seconds of the failed attempts inside jobs")
    job_retry_s: float = Field(description="machine seconds of the failed jobs (setup included)")
    pipeline_rerun_s: float = Field(description="machine seconds of the passed jobs run again")
    machine_s: float = Field(description="rerun_s + job_retry_s + pipeline_rerun_s")
    wait_s: float = Field(description="seconds developers waited again")
    usd: float | None = Field(description="dollars, from the project's machine catalogue")
    unpriced_s: float = Field(description="machine seconds on machines without a price")

    @classmethod
    def of(cls, row: CostRow) -> FlakyCost:
        """The answer form of a domain cost row."""
        return cls.model_validate(row, from_attributes=True)


class TimelineDay(ApiModel):
    """A day of a flaky test: its results that passed or failed, and its flaky ones."""

    day: str
    runs: int
    flaky: int


class FlakyTest(ApiModel):
    """A flaky test: how often it flaked, where and when, and what it cost."""

    nodeid: str
    file: str | None
    runs: int = Field(description="results that passed or failed since its statistics started")
    flaky_runs: int
    rate: float = Field(description="flaky_runs / runs")
    reruns: int = Field(description="passed on a retry inside the job")
    flaky_failures: int = Field(description="failed where the same commit and cell passed")
    first_seen: datetime
    last_seen: datetime
    branches: list[str]
    cells: list[str] = Field(description='"job|labels" of the cells it flaked in')
    timeline: list[TimelineDay]
    cost: FlakyCost
    quarantined: bool

    @classmethod
    def of(cls, item: FlakyTestCost, quarantined: bool) -> FlakyTest:
        """The answer form of a flaky test and its cost."""
        test = item.test
        return cls(
            nodeid=test.nodeid,
            file=test.file,
            runs=test.runs,
            flaky_runs=test.flaky_runs,
            rate=test.rate,
            reruns=test.reruns,
            flaky_failures=test.flaky_failures,
            first_seen=test.first_seen,
            last_seen=test.last_seen,
            branches=list(test.branches),
            cells=list(test.cells),
            timeline=[TimelineDay.model_validate(d, from_attributes=True) for d in test.timeline],
            cost=FlakyCost.of(item.cost),
            quarantined=quarantined,
        )


class Flaky(ApiModel):
    """Flaky tests of the window, most costly first, and what they cost."""

    since: date | None = Field(description="first day read")
    tests_total: int = Field(description="flaky tests found (`tests` holds the first `limit`)")
    tests: list[FlakyTest]
    by_file: list[FlakyCost]
    by_job: list[FlakyCost]
    by_week: list[FlakyCost]
    total: FlakyCost
    this_week: FlakyCost = Field(description="the current UTC week's cost (Monday on)")
    results: int = Field(description="results read")


def flaky_answer(read: FlakyRead, *, limit: int) -> Flaky:
    """The answer form of a flaky read (the first `limit` tests)."""
    report, since, week, quarantined = read.report, read.since, read.week, read.quarantined
    weeks = {row.key: row for row in report.by_week}
    return Flaky(
        since=since,
        tests_total=len(report.tests),
        tests=[FlakyTest.of(t, t.test.nodeid in quarantined) for t in report.tests[:limit]],
        by_file=[FlakyCost.of(r) for r in report.by_file],
        by_job=[FlakyCost.of(r) for r in report.by_job],
        by_week=[FlakyCost.of(r) for r in report.by_week],
        total=FlakyCost.of(report.total),
        this_week=FlakyCost.of(weeks.get(week) or empty_cost(week)),
        results=report.results,
    )
