"""Did the plans come true: `GET /api/v1/projects/{slug}/recommendations/accuracy`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import AfterValidator, StringConstraints

from app.http.deps import ConnDep, ReadProject
from app.http.params import Text, none_if_empty
from app.http.responses import PROJECT_ERRORS, answers
from app.schemas.accuracy import AccuracyAnswer, accuracy_answer
from app.services.plan_accuracy import MAX_PLANS, accuracy_report

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["recommendations"])

# A plan id, empty meaning none. Its bound is part of the type: a `Query(max_length=...)` beside
# MaybeText would measure the None an empty value became (a TypeError, answered 500).
PlanIdText = Annotated[
    Annotated[Text, StringConstraints(max_length=500)] | None, AfterValidator(none_if_empty)
]


@router.get("/recommendations/accuracy", **answers(AccuracyAnswer, *PROJECT_ERRORS))
def accuracy(
    project: ReadProject,
    conn: ConnDep,
    plan: Annotated[PlanIdText, Query(description="one plan's id (default: the newest)")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PLANS, description="plans, newest first")] = 20,
) -> AccuracyAnswer:
    """Did it come true: each plan's predicted wall per job against the jobs that ran it
    (uploads naming it with `plan_id` or a `plan=<id>` label, matched by `shard=I/N`), per
    pipeline with wait, machine time, cost and the errors; and the calibration they give."""
    plans, calibration = accuracy_report(conn, project, plan_id=plan, limit=limit)
    return accuracy_answer(plans, calibration)
