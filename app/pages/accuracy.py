"""The "Did it come true?" page: each executed plan's predicted walls against the measured
ones, per pipeline, and what the measurements teach the model."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.http.deps import ConnDep
from app.pages.common import PageError, PageProject, project_context, render
from app.schemas.accuracy import accuracy_answer
from app.services.plan_accuracy import MAX_PLANS, accuracy_report
from figures.accuracy_figure import accuracy_figure
from figures.theme import figure_html

router = APIRouter(include_in_schema=False)


@router.get("/p/{slug}/recommendations/accuracy", response_class=HTMLResponse)
def accuracy_page(
    request: Request, project: PageProject, conn: ConnDep, plan: str | None = None
) -> Any:
    """Predicted against measured wall per job, wait and machine time per pipeline."""
    if plan is not None and (len(plan) > 500 or "\x00" in plan):
        raise PageError(422, "plan: not a plan id")
    plans, calibration = accuracy_report(conn, project, plan_id=plan or None, limit=MAX_PLANS)
    # The page renders the API's typed answer itself, not a dict dumped from it.
    answer = accuracy_answer(plans, calibration)
    context = project_context(
        request,
        conn,
        project,
        "recommendations",
        answer=answer,
        figure=figure_html(accuracy_figure(plans), "fig-accuracy"),
    )
    return render(request, "accuracy.html", context)
