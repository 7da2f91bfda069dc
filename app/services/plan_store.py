"""Plans as handed out: stored when the recommendations and shards answer, and the
calibration a recommendation plans with, learnt from the jobs that ran earlier plans
(docs/planner.md#did-it-come-true-plans-that-close-the-loop)."""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd
from sqlalchemy import Connection

from analysis.accuracy.calibration import Calibration, calibrate
from analysis.accuracy.plan_accuracy import job_samples, plan_accuracy
from analysis.accuracy.plan_record import (
    median_setup_s,
    median_workers,
    queue_plan_record,
    shard_plan_record,
    split_plan_record,
)
from analysis.split.result import PlannedJob
from analysis.split.shards import Shard
from app.db.plans import load_plan_runs, load_plans, store_plan
from app.project_records import Project

# Executed plans the calibration learns from (the newest): the model changes, old plans age.
CALIBRATION_PLANS = 50


def record_split_plan(
    conn: Connection, project: Project, cell: str, jobs: Sequence[PlannedJob]
) -> str | None:
    """Store a split plan's proposed jobs for `cell` as a plan; its id (None without jobs)."""
    if not jobs:
        return None
    record = split_plan_record(cell, jobs)
    store_plan(conn, project.id, record)
    return record.id


def record_shard_plan(
    conn: Connection,
    project: Project,
    shards: Sequence[Shard],
    runs: pd.DataFrame | None,
    prices: dict[str, float] | None,
) -> str:
    """Store a shard assignment as a plan, each shard's wall = the history's setup + its tests."""
    machine, setup_s, workers = _history_setup(runs)
    record = shard_plan_record(
        shards,
        cell="",
        setup_s=setup_s,
        workers=workers,
        machine=machine,
        price_per_min=prices,
    )
    store_plan(conn, project.id, record)
    return record.id


def record_queue_plan(
    conn: Connection,
    project: Project,
    queue_id: int,
    *,
    nodes: int,
    tests: int,
    total_s: float,
    runs: pd.DataFrame | None,
) -> str:
    """Store a pipeline's queue as a plan of its nodes, each the history's setup plus an even
    share of the queue; its id (the nodes' uploads name it)."""
    machine, setup_s, workers = _history_setup(runs)
    record = queue_plan_record(
        queue_id,
        nodes=nodes,
        tests=tests,
        total_s=total_s,
        setup_s=setup_s,
        workers=workers,
        machine=machine,
    )
    store_plan(conn, project.id, record)
    return record.id


def _history_setup(runs: pd.DataFrame | None) -> tuple[str | None, float | None, int]:
    """(the history's most common machine, its median setup seconds, its xdist workers)."""
    if runs is None or not len(runs):
        return None, None, 1
    machines = runs["machine"].dropna().value_counts()
    machine = str(machines.index[0]) if len(machines) else None
    return machine, median_setup_s(runs), median_workers(runs)


def project_calibration(conn: Connection, project: Project) -> Calibration:
    """Setup and test factors and the expected error from this project's executed plans."""
    plans = load_plans(conn, project.id, limit=CALIBRATION_PLANS)
    runs = load_plan_runs(conn, project.id, [p.id for p in plans])
    return calibrate(job_samples(plan_accuracy(plans, runs)))
