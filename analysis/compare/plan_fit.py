"""Does the project's stored split plan still fit once this pipeline's test times hold?

Each test that moved beyond its noise (slower, faster, new, removed) adds its move to the job
of the plan that runs it, found as the planner finds it: the finest of the test's nodeid,
function, `file::Class` and file among the job's members; a test no member names goes to the
job that runs "everything else" (the one with the most members, as
`analysis.ci.config.default_job` picks it). A job's wall grows by its
added test seconds over its workers. The plan's target wait is the wait it promised (its
longest predicted job): a job pushed past it lengthens the developer's wait.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from analysis.accuracy.plan_record import PlanRecord
from analysis.compare.runs import Comparison

# Below this a job's overrun is the plan's own rounding, not news.
MIN_OVERRUN_S = 0.5


@dataclass(frozen=True)
class JobOverrun:
    """A planned job this pipeline's moves push past the plan's target wait."""

    index: int
    name: str
    planned_wall_s: float
    added_s: float  # wall seconds the moved tests add (test seconds over workers)
    wall_s: float
    overrun_s: float  # wall_s - target_wait_s


@dataclass(frozen=True)
class PlanFit:
    """The stored split plan against this pipeline's test times."""

    plan_id: str
    cell: str
    target_wait_s: float
    wait_s: float  # the plan's wait once the moves hold
    fits: bool
    overruns: tuple[JobOverrun, ...]


def moved_seconds(comparison: Comparison, base_results: pd.DataFrame) -> dict[str, float]:
    """Seconds each test adds per run beyond its noise: slower and faster tests their move,
    new tests their time, removed tests minus their base median."""
    moves: dict[str, float] = {}
    for move in (*comparison.slower, *comparison.faster):
        moves[move.nodeid] = move.here_s - (move.base_median_s or 0.0)
    for move in comparison.new_tests:
        moves[move.nodeid] = move.here_s
    if comparison.removed_tests:
        removed = base_results[base_results["nodeid"].isin(comparison.removed_tests)]
        for nodeid, median in removed.groupby("nodeid")["duration_s"].median().items():
            moves[str(nodeid)] = -float(median)
    return moves


def job_of_tests(plan: PlanRecord, nodeids: Sequence[str]) -> dict[str, int]:
    """Each nodeid's job position in `plan.jobs` (finest member first, else the home job)."""
    job_at = {m: j for j, job in enumerate(plan.jobs) for m in job.members}
    # The home job by its whole member count (stored members are the first few only).
    sizes = [max(job.members_total, len(job.members)) for job in plan.jobs]
    home = sizes.index(max(sizes)) if sizes else 0
    out: dict[str, int] = {}
    for nodeid in nodeids:
        parts = nodeid.split("::")
        by_class = "::".join(parts[:2]) if len(parts) >= 3 else None
        for key in (nodeid, nodeid.partition("[")[0], by_class, parts[0]):
            if key is not None and key in job_at:
                out[nodeid] = job_at[key]
                break
        else:
            out[nodeid] = home
    return out


def fit_plan(plan: PlanRecord, moves: Mapping[str, float]) -> PlanFit:
    """The plan's jobs with this pipeline's moves added; the ones past its target wait."""
    target = plan.wait_s
    added = [0.0] * len(plan.jobs)
    for nodeid, at in job_of_tests(plan, list(moves)).items():
        added[at] += moves[nodeid] / max(plan.jobs[at].workers, 1)
    overruns = []
    walls = []
    for job, extra in zip(plan.jobs, added, strict=True):
        wall = job.wall_s + extra
        walls.append(wall)
        if extra > 0 and wall - target > MIN_OVERRUN_S:
            overruns.append(JobOverrun(job.index, job.name, job.wall_s, extra, wall, wall - target))
    return PlanFit(
        plan_id=plan.id,
        cell=plan.cell,
        target_wait_s=target,
        wait_s=max(walls, default=0.0),
        fits=not overruns,
        overruns=tuple(sorted(overruns, key=lambda o: -o.overrun_s)),
    )
