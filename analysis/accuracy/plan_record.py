"""What a handed-out plan predicted, per job, in one shape for split plans and shard plans.

A plan is stored when it is handed out (app/db/plans.py) and compared later with the jobs
that ran it (analysis/accuracy/plan_accuracy.py). Its id is a hash of what the jobs run, so the same
plan asked twice has the same id; the prediction kept is the one made when it was first
handed out.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import pandas as pd

from analysis.split.job_model import JobParts
from analysis.split.result import PlannedJob
from analysis.split.shards import Shard, plan_id

PlanKind = Literal["split", "shard", "queue"]
# Members stored per job: a shard of a 200k-test suite lists every nodeid, the stored record
# keeps the first ones and the count (the id already names the whole selection).
MAX_STORED_MEMBERS = 200


@dataclass(frozen=True)
class PredictedJob:
    """One planned job: its 1-based index (the `shard=I/N` of the jobs that run it), its
    predicted wall and what that wall is made of."""

    index: int
    name: str
    wall_s: float
    tests_s: float  # every test's seconds, before dividing by workers
    setup_s: float | None  # wall - tests / workers: CI setup, start, collection, first use
    workers: int = 1
    machine: str | None = None
    cost: float | None = None
    n_tests: int = 0
    members: tuple[str, ...] = ()
    members_total: int = 0
    # The model's named parts when it gives them (ci_setup_s, startup_s, collect_s...).
    parts: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class PlanRecord:
    """A plan as handed out: id, kind, the cell it was made for and its predicted jobs."""

    id: str
    kind: PlanKind
    cell: str
    jobs: tuple[PredictedJob, ...]
    created_at: pd.Timestamp | None = None

    @property
    def wait_s(self) -> float:
        """Predicted wait: the longest job."""
        return max((job.wall_s for job in self.jobs), default=0.0)

    @property
    def machine_s(self) -> float:
        """Predicted machine time: every job's wall."""
        return sum(job.wall_s for job in self.jobs)

    @property
    def cost(self) -> float | None:
        """Predicted cost, None unless every job is priced."""
        costs = [job.cost for job in self.jobs]
        return sum(c for c in costs if c is not None) if all(c is not None for c in costs) else None


def _bounded(members: Sequence[str]) -> tuple[tuple[str, ...], int]:
    return tuple(members[:MAX_STORED_MEMBERS]), len(members)


def shard_plan_record(
    shards: Sequence[Shard],
    *,
    cell: str,
    setup_s: float | None,
    workers: int = 1,
    machine: str | None = None,
    price_per_min: Mapping[str, float] | None = None,
) -> PlanRecord:
    """A shard assignment as a plan: each shard's wall is the history's setup plus its tests
    over the history's xdist workers (the shards API predicts test seconds only; setup None
    counts as 0 s)."""
    price = price_per_min.get(machine) if price_per_min and machine else None
    jobs = []
    for shard in shards:
        members, total = _bounded(shard.members)
        jobs.append(
            _setup_and_tests_job(
                shard.index,
                f"shard {shard.index}/{len(shards)}",
                tests_s=shard.predicted_s,
                setup_s=setup_s,
                workers=workers,
                machine=machine,
                price=price,
                n_tests=len(shard.nodeids),
                members=members,
                members_total=total,
            )
        )
    return PlanRecord(plan_id(shards), "shard", cell, tuple(jobs))


def queue_plan_id(queue_id: int) -> str:
    """The plan id of a pipeline's queue, the same for every node that opens or joins it."""
    return hashlib.sha256(f"queue\0{queue_id}".encode()).hexdigest()[:12]


def queue_plan_record(
    queue_id: int,
    *,
    nodes: int,
    tests: int,
    total_s: float,
    setup_s: float | None,
    workers: int = 1,
    machine: str | None = None,
) -> PlanRecord:
    """A queue as a plan of its nodes: the queue hands out work until they finish together,
    so each node's wall is the history's setup plus an even share of the queue's predicted
    seconds (over the history's xdist workers). A node's selection is not known in advance."""
    share = total_s / max(nodes, 1)
    jobs = tuple(
        _setup_and_tests_job(
            index,
            f"node {index}/{nodes}",
            tests_s=share,
            setup_s=setup_s,
            workers=workers,
            machine=machine,
            price=None,
            n_tests=round(tests / max(nodes, 1)),
        )
        for index in range(1, nodes + 1)
    )
    return PlanRecord(queue_plan_id(queue_id), "queue", "", jobs)


def _setup_and_tests_job(
    index: int,
    name: str,
    *,
    tests_s: float,
    setup_s: float | None,
    workers: int,
    machine: str | None,
    price: float | None,
    n_tests: int,
    members: tuple[str, ...] = (),
    members_total: int = 0,
) -> PredictedJob:
    """A job predicted as setup (None counts as 0 s) plus its tests over the workers."""
    workers = max(workers, 1)
    wall = (setup_s or 0.0) + tests_s / workers
    return PredictedJob(
        index=index,
        name=name,
        wall_s=wall,
        tests_s=tests_s,
        setup_s=setup_s,
        workers=workers,
        machine=machine,
        cost=None if price is None else wall / 60.0 * price,
        n_tests=n_tests,
        members=members,
        members_total=members_total,
    )


def split_plan_id(cell: str, jobs: Sequence[PlannedJob]) -> str:
    """A short stable id of a split plan: its cell and each job's selection, in order."""
    digest = hashlib.sha256(b"split\0")
    digest.update(cell.encode("utf-8", "surrogatepass") + b"\0")
    for index, job in enumerate(jobs, start=1):
        digest.update(f"{index}\0".encode())
        for arg in (*job.members, "\1", *job.runner_args):
            digest.update(str(arg).encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:12]


def split_plan_record(cell: str, jobs: Sequence[PlannedJob]) -> PlanRecord:
    """The proposed jobs of a split plan as a plan, each figure as the answer hands it out
    (seconds to the millisecond, cost to 4 places), so the record is what the jobs were told."""
    predicted = []
    for index, job in enumerate(jobs, start=1):
        members, total = _bounded(job.members)
        predicted.append(
            PredictedJob(
                index=index,
                name=job.name,
                wall_s=round(job.wall_s, 3),
                tests_s=round(job.test_s, 3),
                setup_s=round(job.overhead_s, 3),
                workers=max(job.workers, 1),
                machine=job.machine,
                cost=None if job.cost is None else round(job.cost, 4),
                n_tests=job.n_tests,
                members=members,
                members_total=total,
                parts=_named_parts(job.parts),
            )
        )
    return PlanRecord(split_plan_id(cell, jobs), "split", cell, tuple(predicted))


def _named_parts(parts: JobParts | None) -> dict[str, float]:
    """The model's named parts that are finite numbers (an unknown part is left out, never 0)."""
    if parts is None:
        return {}
    named: dict[str, float | None] = {
        "ci_setup_s": round(parts.ci_setup_s, 3),
        "startup_s": round(parts.startup_s, 3),
        "collect_s": round(parts.collect_s, 3),
        "first_use_s": round(parts.first_use_s, 3),
        "exit_s": round(parts.exit_s, 3),
        "tests_s": round(parts.tests_s, 3),
        "wall_s": round(parts.wall_s, 3),
        "cpu_share": None if parts.cpu_share is None else round(parts.cpu_share, 3),
        "setup_factor": parts.setup_factor,
        "test_factor": parts.test_factor,
    }
    return {k: float(v) for k, v in named.items() if v is not None and math.isfinite(v)}


def median_workers(runs: pd.DataFrame) -> int:
    """The history's typical xdist worker count (1 without runs)."""
    workers = pd.to_numeric(runs["xdist_workers"], errors="coerce").dropna()
    return max(int(workers.median()), 1) if len(workers) else 1


def median_setup_s(runs: pd.DataFrame) -> float | None:
    """The history's per-job setup: median over runs with a wall of wall - test_s / workers
    (the split planner's overhead, from the runs frame's own totals); None without walls."""
    if runs.empty:
        return None
    wall = pd.to_numeric(runs["wall_s"], errors="coerce")
    workers = pd.to_numeric(runs["xdist_workers"], errors="coerce").fillna(1).clip(lower=1)
    setup = (wall - pd.to_numeric(runs["test_s"], errors="coerce") / workers).clip(lower=0.0)
    setup = setup.dropna()
    return float(setup.median()) if len(setup) else None
