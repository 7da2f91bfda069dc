"""Did it come true: stored plans against the jobs that ran them, for the accuracy API
and the page, priced from the project's catalogue
(docs/planner.md#did-it-come-true-plans-that-close-the-loop)."""

from __future__ import annotations

import pandas as pd
from sqlalchemy import Connection

from analysis.accuracy.calibration import Calibration
from analysis.accuracy.plan_accuracy import PlanAccuracy, plan_accuracy
from analysis.errors import AnswerError
from app.db.plans import load_plan_runs, load_plans
from app.project_records import Project
from app.services.plan_store import project_calibration
from app.services.recommendations import project_prices

# Most plans one answer compares (each with every pipeline that ran it).
MAX_PLANS = 100


class PlanNotFound(AnswerError):
    """No stored plan has this id in this project."""

    status = 404
    code = "plan-not-found"

    def __init__(self, plan_id: str) -> None:
        super().__init__(f"no plan {plan_id!r} in this project")


def accuracy_report(
    conn: Connection, project: Project, *, plan_id: str | None, limit: int
) -> tuple[list[PlanAccuracy], Calibration]:
    """One plan (or the `limit` newest executed ones) against its runs, and the calibration."""
    plans = load_plans(conn, project.id, plan_id=plan_id, limit=limit)
    if plan_id is not None and not plans:
        raise PlanNotFound(plan_id)
    runs = load_plan_runs(conn, project.id, [p.id for p in plans])
    planned = [job.machine for plan in plans for job in plan.jobs]
    machines = pd.DataFrame({"machine": [*planned, *runs["machine"].tolist()]}, dtype=object)
    prices = project_prices(project, machines)
    return plan_accuracy(plans, runs, price_per_min=prices), project_calibration(conn, project)
