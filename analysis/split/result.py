"""What a split plan answers: the jobs before and after, the totals, the Pareto table, the
verdict (their answer form, rounded for JSON, is app/schemas/split.py's)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from analysis.split.job_model import JobParts
from analysis.split.options import Granularity, Objective

Verdict = Literal["split", "keep", "not_worth_it", "refused"]


@dataclass(frozen=True)
class PlannedJob:
    """One job of a layout: what it runs and its predicted times."""

    name: str
    members: tuple[str, ...]  # files, `file::Class` or nodeids (empty for today's jobs)
    n_tests: int
    test_s: float  # all phases of every member, before dividing by workers
    overhead_s: float
    workers: int
    machine: str | None
    wall_s: float
    cost: float | None
    pytest_args: tuple[str, ...] = ()
    # What the job's runner takes: its arguments and a full shell command.
    runner_args: tuple[str, ...] = ()
    command: str = ""
    # The job model's parts: overhead_s is their fixed part, wall_s their sum.
    parts: JobParts | None = None


@dataclass(frozen=True)
class LayoutTotals:
    """A layout's pipeline wait (longest job), machine time (sum) and cost."""

    jobs: int
    wait_s: float
    machine_s: float
    cost: float | None


@dataclass(frozen=True)
class ParetoRow:
    """The best plan found for one job count."""

    jobs: int
    wait_s: float
    machine_s: float
    cost: float | None
    lower_bound_wait_s: float  # overhead + max(largest item, total / jobs) / workers
    feasible: bool  # every job within the budget
    pareto_optimal: bool = False  # no other count is at least as good on wait and machine
    # The count the plan adopts: only ever set when the verdict is "split", so the table can
    # never say "chosen" beside a "keep" or "not worth it" verdict.
    chosen: bool = False
    best: bool = False  # the count the verdict judged (adopted or not)


@dataclass(frozen=True)
class SplitPlan:
    """The recommendation: today's layout, the proposed one, the verdict and the trade-offs."""

    verdict: Verdict
    reason: str
    objective: Objective
    granularity: Granularity
    before_jobs: tuple[PlannedJob, ...]
    jobs: tuple[PlannedJob, ...]  # the proposed layout (today's when the verdict says so)
    before: LayoutTotals
    after: LayoutTotals
    pareto: tuple[ParetoRow, ...]
    estimates: pd.DataFrame  # per test: file, classname, duration_s, samples, source
    budget_s: float | None = None
    warnings: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    # False when planning stopped early (time limit, client gone): not every count was tried.
    complete: bool = True
    # The job model's inputs the history lacked; today's fallbacks stood in for them.
    inputs_missing: tuple[str, ...] = ()

    @property
    def estimate_sources(self) -> EstimateSources:
        """Where the per-test durations came from."""
        sources = self.estimates["source"].value_counts()
        return EstimateSources(
            tests=len(self.estimates),
            without_history=int((self.estimates["source"] != "history").sum()),
            by_source={str(k): int(v) for k, v in sources.items()},
        )


@dataclass(frozen=True)
class EstimateSources:
    """How many tests the plan estimated, how many without history, and by which source."""

    tests: int
    without_history: int
    by_source: dict[str, int]
