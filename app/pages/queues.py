"""The queue page: a pipeline's queue mode run, each node's batches on a timeline, the idle
tail, budget stops, retries, and tests run twice or nowhere."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.http.deps import ConnDep
from app.pages.common import PageError, PageProject, project_context, render
from app.services.queue_answers import QueueState
from app.services.queues import QueueNotFound, list_queues, pipeline_queue_status
from figures.queue_timeline import queue_timeline_figure
from figures.theme import figure_html

router = APIRouter(include_in_schema=False)


@router.get("/p/{slug}/queues", response_class=HTMLResponse)
def queues_page(
    request: Request, project: PageProject, conn: ConnDep, pipeline: str | None = None
) -> Any:
    """The project's queues; with `pipeline`, that pipeline's queue in detail."""
    if pipeline is not None and (len(pipeline) > 200 or "\x00" in pipeline):
        raise PageError(422, "pipeline: not a pipeline id")
    queues = list_queues(conn, project)
    chosen = pipeline or (queues[0].pipeline if queues else None)
    state: QueueState | None = None
    figure = ""
    if chosen is not None:
        try:
            state = pipeline_queue_status(conn, project, chosen)
        except QueueNotFound as exc:
            raise PageError(404, str(exc)) from exc
        figure = figure_html(queue_timeline_figure(state.report), "fig-queue")
    context = project_context(
        request,
        conn,
        project,
        "recommendations",
        queues=queues,
        queue=state,
        report=state.report if state else None,
        figure=figure,
    )
    return render(request, "queues.html", context)
