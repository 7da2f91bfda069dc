"""The recommendations page: the split plan as a before/after Gantt, machine sizing, and the
config to copy."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse
from sqlalchemy import Connection

from analysis.errors import AnswerError
from analysis.filters import Filters
from analysis.split.options import SplitOptions, parse_job_range, parse_plan_duration_s
from app.http.deps import ConnDep
from app.http.params import FiltersDep
from app.http.session import csrf_ok
from app.pages.common import PageProject, project_context, render
from app.project_records import Project
from app.schemas.sizing import Machines
from app.schemas.split import SplitPlan
from app.services.project_reads import FrameCache
from app.services.recommendations import (
    MachinesAnswer,
    SplitAnswer,
    load_history,
    machines_recommendation,
    split_recommendation,
    track_split_plan,
)
from figures.split_gantt import split_gantt_figure
from figures.theme import figure_html

router = APIRouter(include_in_schema=False)


@dataclass(frozen=True)
class PlanQuestion:
    """The page's form: the split asked for (query parameters of both the read and the POST
    that tracks it)."""

    jobs: str = "2-6"
    granularity: str = "auto"
    objective: str = "wait"
    overhead: str | None = None
    budget: str | None = None
    cell: str | None = None


PlanQuestionDep = Annotated[PlanQuestion, Depends()]


@router.get("/p/{slug}/recommendations", response_class=HTMLResponse)
def recommendations_page(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    filters: FiltersDep,
    question: PlanQuestionDep,
) -> Any:
    """The split plan as a before/after Gantt, machine sizing, and the config to copy; a read,
    it stores nothing (the "Track this plan" form POSTs)."""
    return _page(request, project, conn, filters, question)


@router.post("/p/{slug}/recommendations", response_class=HTMLResponse)
def track_plan(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    filters: FiltersDep,
    question: PlanQuestionDep,
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Any:
    """Store the plan shown for the same question and show it with its id and labelled config."""
    if not csrf_ok(request, csrf):
        notice = "The form expired: reload the page and track the plan again."
        return _page(request, project, conn, filters, question, notice=notice, status=403)
    return _page(request, project, conn, filters, question, track=True)


def _page(
    request: Request,
    project: Project,
    conn: Connection,
    filters: Filters,
    question: PlanQuestion,
    *,
    track: bool = False,
    notice: str | None = None,
    status: int = 200,
) -> Any:
    jobs, granularity, objective = question.jobs, question.granularity, question.objective
    overhead, budget, cell = question.overhead, question.budget, question.cell
    plan: SplitAnswer | None = None
    machines: MachinesAnswer | None = None
    error: str | None = None
    machines_error: str | None = None
    try:
        options = SplitOptions(
            jobs=parse_job_range(jobs),
            granularity=granularity,  # type: ignore[arg-type]
            overhead_s=parse_plan_duration_s(overhead),
            budget_s=parse_plan_duration_s(budget),
            objective=objective,  # type: ignore[arg-type]
        )
    except AnswerError as exc:
        error = str(exc)
    else:
        # The answer only changes with the data, the question and the project's catalogue.
        key = (
            "recommendations",
            filters.key,
            options,
            cell,
            project.catalogue,
            project.catalogue_toml,
        )
        plan, error, machines, machines_error = FrameCache.for_project(conn, project.id).get(
            key,
            lambda: _plan_and_machines(conn, project, filters, options, cell or None),
            # A plan cut short by the time limit is shown but never kept.
            keep=lambda answer: answer[0] is None or answer[0].complete,
        )
        if track and plan is not None:
            plan = track_split_plan(conn, project, plan)
    context = project_context(
        request,
        conn,
        project,
        "recommendations",
        # The page renders the answer the API gives for the same question.
        plan=SplitPlan.answer(plan) if plan is not None else None,
        error=error,
        form={
            "jobs": jobs,
            "granularity": granularity,
            "objective": objective,
            "overhead": overhead or "",
            "budget": budget or "",
            "cell": cell or "",
        },
        gantt=figure_html(split_gantt_figure(plan.plan), "fig-gantt") if plan else None,
        machines=Machines.of(machines) if machines is not None else None,
        machines_error=machines_error,
        notice=notice,
        # The same question posted back: the query holds the filters and the options.
        track_action=f"{request.url.path}?{request.url.query}",
    )
    return render(request, "recommendations.html", context, status)


def _plan_and_machines(
    conn: Connection, project: Project, filters: Filters, options: SplitOptions, cell: str | None
) -> tuple[SplitAnswer | None, str | None, MachinesAnswer | None, str | None]:
    """(plan, its error, machine sizing, its error) for the recommendations page."""
    try:
        history = load_history(conn, project, filters, one_cell=True, cell=cell)
        plan = split_recommendation(
            conn, project, filters, options=options, cell=cell, history=history
        )
    except AnswerError as exc:  # anything else is ours: a logged 500
        return None, str(exc), None, None
    try:
        # Sizing the proposed jobs re-plans the split: only worth it when there is one.
        machines = machines_recommendation(
            conn,
            project,
            filters,
            cell=plan.cell,
            split_options=options if plan.plan.verdict == "split" else None,
            history=history,
        )
    except AnswerError as exc:
        return plan, None, None, str(exc)
    return plan, None, machines, None
