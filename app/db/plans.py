"""Plans as handed out (the `plan` table) and the runs that executed them (`run.plan_id`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
from pydantic import TypeAdapter
from sqlalchemy import Connection, text

from analysis.accuracy.plan_accuracy import RUN_COLUMNS
from analysis.accuracy.plan_record import PlanRecord, PredictedJob

# Plans kept per project that no run has executed yet: every question asked of the planner
# stores one, so the oldest unexecuted ones go first. Executed plans leave with their runs.
MAX_UNEXECUTED_PLANS = 500
# Runs read per accuracy question: the newest, enough for dozens of pipelines of big plans.
MAX_PLAN_RUNS = 5000

# The one codec of plan.predicted: the dataclass is the schema (no hand-written dict form).
PREDICTED_JOBS = TypeAdapter(tuple[PredictedJob, ...])


def store_plan(conn: Connection, project_id: int, record: PlanRecord) -> None:
    """Keep a plan as first handed out; the same plan again changes nothing (its id names it)."""
    inserted = conn.execute(
        text(
            """
            INSERT INTO plan (project_id, id, kind, cell, jobs, wait_s, machine_s, cost, predicted)
            VALUES (:project, :id, :kind, :cell, :jobs, :wait, :machine, :cost,
                CAST(:predicted AS jsonb))
            ON CONFLICT (project_id, id) DO NOTHING
            RETURNING id
            """
        ),
        {
            "project": project_id,
            "id": record.id,
            "kind": record.kind,
            "cell": record.cell,
            "jobs": len(record.jobs),
            "wait": record.wait_s,
            "machine": record.machine_s,
            "cost": record.cost,
            "predicted": PREDICTED_JOBS.dump_json(record.jobs).decode(),
        },
    ).first()
    if inserted is not None:
        _prune(conn, project_id)


def _prune(conn: Connection, project_id: int) -> None:
    # One pruner per project at a time: two deleting overlapping rows could deadlock, and the
    # one that skips leaves at most a plan or two over the cap until the next insert.
    locked = conn.execute(
        text("SELECT pg_try_advisory_xact_lock(727018, hashint8(:project))"),
        {"project": project_id},
    ).scalar_one()
    if not locked:
        return
    conn.execute(
        text(
            """
            DELETE FROM plan p WHERE p.project_id = :project AND p.id IN (
                SELECT q.id FROM plan q
                WHERE q.project_id = :project AND NOT EXISTS (
                    SELECT 1 FROM run r WHERE r.project_id = q.project_id AND r.plan_id = q.id)
                ORDER BY q.created_at DESC OFFSET :keep)
            """
        ),
        {"project": project_id, "keep": MAX_UNEXECUTED_PLANS},
    )


def load_plans(
    conn: Connection, project_id: int, *, plan_id: str | None = None, limit: int = 20
) -> list[PlanRecord]:
    """One plan by id (executed or not), else the `limit` newest plans some run executed."""
    where = (
        "p.id = :plan"
        if plan_id is not None
        else "EXISTS (SELECT 1 FROM run r WHERE r.project_id = p.project_id AND r.plan_id = p.id)"
    )
    rows = conn.execute(
        text(
            f"""
            SELECT p.id, p.kind, p.cell, p.created_at, p.predicted FROM plan p
            WHERE p.project_id = :project AND {where}
            ORDER BY p.created_at DESC, p.id LIMIT :limit
            """
        ),
        {"project": project_id, "plan": plan_id, "limit": limit},
    ).all()
    return [
        PlanRecord(
            id=str(row.id),
            kind=row.kind,
            cell=str(row.cell),
            jobs=PREDICTED_JOBS.validate_python(row.predicted),
            created_at=pd.Timestamp(row.created_at),
        )
        for row in rows
    ]


def load_plan_runs(conn: Connection, project_id: int, plan_ids: Sequence[str]) -> pd.DataFrame:
    """The runs that executed these plans (newest MAX_PLAN_RUNS), in plan_accuracy's shape.

    A run's measured wall is its CI job's when the client sent it (the plan predicts the CI
    setup too), else the test process's; both end at the session, so the process's exit
    tail is added where `laptime-ci run` measured it."""
    frame = pd.read_sql_query(
        text(
            """
            SELECT id AS run_id, plan_id, pipeline, commit_sha AS commit, job, labels,
                started_at, COALESCE(job_wall_s, wall_s) + COALESCE(exit_s, 0) AS wall_s,
                test_s, xdist_workers, machine
            FROM run WHERE project_id = :project AND plan_id = ANY(:plans)
            ORDER BY started_at DESC, id DESC LIMIT :limit
            """
        ),
        conn,
        params={"project": project_id, "plans": list(plan_ids), "limit": MAX_PLAN_RUNS},
    )
    frame["labels"] = frame["labels"].map(
        lambda v: v if isinstance(v, dict) else json.loads(v) if v else {}
    )
    frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True)
    return frame[list(RUN_COLUMNS)]


def latest_split_plan(
    conn: Connection, project_id: int, *, cells: Sequence[str], plan_ids: Sequence[str]
) -> PlanRecord | None:
    """The split plan these runs executed, else the newest split plan stored for one of
    `cells` (the plan the project follows now); None when there is none."""
    row = conn.execute(
        text(
            """
            SELECT p.id, p.kind, p.cell, p.created_at, p.predicted FROM plan p
            WHERE p.project_id = :project AND p.kind = 'split'
              AND (p.id = ANY(:plans) OR p.cell = ANY(:cells))
            ORDER BY (p.id = ANY(:plans)) DESC, p.created_at DESC, p.id LIMIT 1
            """
        ),
        {"project": project_id, "plans": list(plan_ids), "cells": list(cells)},
    ).first()
    if row is None:
        return None
    return PlanRecord(
        id=str(row.id),
        kind=row.kind,
        cell=str(row.cell),
        jobs=PREDICTED_JOBS.validate_python(row.predicted),
        created_at=pd.Timestamp(row.created_at),
    )
