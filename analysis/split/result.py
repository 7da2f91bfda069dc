"""What a split plan answers: the jobs before and after, the totals, the Pareto table, the
verdict; each with its JSON form (`laptime plan --json` and the API return `to_dict()`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from analysis.split.job_model import JobParts
from analysis.split.options import Granularity, Objective

Verdict = Literal["split", "keep", "not_worth_it", "refused"]


def _with_cost(out: dict[str, Any], cost: float | None) -> dict[str, Any]:
    """`out` with the cost added when known (never invented)."""
    if cost is not None:
        out["cost"] = round(cost, 4)
    return out


def _totals_dict(jobs: int, wait_s: float, machine_s: float) -> dict[str, Any]:
    return {"jobs": jobs, "wait_s": round(wait_s, 3), "machine_s": round(machine_s, 3)}


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; cost is left out when unknown."""
        out: dict[str, Any] = {
            "name": self.name,
            "members": list(self.members),
            "n_tests": self.n_tests,
            "predicted_test_s": round(self.test_s, 3),
            "overhead_s": round(self.overhead_s, 3),
            "workers": self.workers,
            "machine": self.machine,
            "predicted_wall_s": round(self.wall_s, 3),
            "pytest_args": list(self.pytest_args),
            "runner_args": list(self.runner_args),
            "command": self.command,
        }
        if self.parts is not None:
            out["parts"] = self.parts.to_dict()
        return _with_cost(out, self.cost)


@dataclass(frozen=True)
class LayoutTotals:
    """A layout's pipeline wait (longest job), machine time (sum) and cost."""

    jobs: int
    wait_s: float
    machine_s: float
    cost: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; cost is left out when unknown."""
        return _with_cost(_totals_dict(self.jobs, self.wait_s, self.machine_s), self.cost)


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form; cost is left out when unknown."""
        out: dict[str, Any] = {
            **_totals_dict(self.jobs, self.wait_s, self.machine_s),
            "lower_bound_wait_s": round(self.lower_bound_wait_s, 3),
            "feasible": self.feasible,
            "pareto_optimal": self.pareto_optimal,
            "chosen": self.chosen,
            "best": self.best,
        }
        return _with_cost(out, self.cost)


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

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict: what `laptime plan --json` prints and the API returns."""
        sources = self.estimates["source"].value_counts().to_dict()
        return {
            "verdict": self.verdict,
            "reason": self.reason,
            "complete": self.complete,
            "objective": self.objective,
            "granularity": self.granularity,
            "budget_s": self.budget_s,
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "before_jobs": [job.to_dict() for job in self.before_jobs],
            "jobs": [job.to_dict() for job in self.jobs],
            "pareto": [row.to_dict() for row in self.pareto],
            "estimates": {
                "tests": len(self.estimates),
                "without_history": int((self.estimates["source"] != "history").sum()),
                "by_source": {str(k): int(v) for k, v in sources.items()},
            },
            "warnings": list(self.warnings),
            "inputs_missing": list(self.inputs_missing),
            "config": dict(self.config),
        }
