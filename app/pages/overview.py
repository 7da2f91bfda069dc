"""The project overview: developer wait and machine time per pipeline and per job."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlencode

import pandas as pd
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.http.deps import ConnDep
from app.http.params import FiltersDep
from app.pages.changes import changes_touching
from app.pages.common import TABLE_ROWS, PageProject, project_context, render
from app.schemas.flaky import flaky_answer
from app.services.changes import ChangeQuery, changes_of
from app.services.flaky import project_flaky
from app.services.project_reads import open_week_start, project_pipelines
from app.services.uploads import recent_uploads
from figures.pipelines import job_time_figure, pipeline_time_figure
from figures.theme import figure_html

router = APIRouter(include_in_schema=False)


def _headline(pipelines: pd.DataFrame) -> dict[str, Any]:
    machine = pipelines["machine_s"].astype(float)
    setup = pipelines["setup_overhead_s"].astype(float)
    known = setup.notna()
    setup_share = float(setup[known].sum() / machine[known].sum()) if machine[known].sum() else None
    return {
        "pipelines": len(pipelines),
        "wait_p50_s": float(pipelines["wait_s"].median()) if len(pipelines) else None,
        "wait_max_s": float(pipelines["wait_s"].max()) if len(pipelines) else None,
        "machine_p50_s": float(machine.median()) if len(pipelines) else None,
        "setup_share": setup_share,
    }


@router.get("/p/{slug}", response_class=HTMLResponse)
def overview_page(
    request: Request, project: PageProject, conn: ConnDep, filters: FiltersDep
) -> Any:
    """Developer wait and machine time per pipeline and per job, and the latest uploads."""
    report = project_pipelines(conn, project.id, filters)
    # With one job chosen (the jobs table's links) the page is that job's: its changes.
    job = filters.jobs[0] if len(filters.jobs) == 1 else None
    touching = changes_touching(
        conn, project, ChangeQuery(state="open", jobs=(job,) if job else ())
    )
    open_by_job = Counter(c.job for c in changes_of(conn, project, ChangeQuery(state="open")))
    pipelines = report.pipelines.pipelines
    # This week's flaky cost, whatever the window: the figure the Flaky page calls "this week".
    week = project_flaky(conn, project, replace(filters, since=open_week_start(), until=None))
    flaky_week = flaky_answer(week, limit=1).this_week
    context = project_context(
        request,
        conn,
        project,
        "overview",
        headline=_headline(pipelines),
        summary=report.pipelines,
        jobs=report.jobs.to_dict(orient="records"),
        recent=pipelines.head(TABLE_ROWS).to_dict(orient="records"),
        flaky_week=flaky_week,
        uploads=recent_uploads(conn, project.id, limit=15),
        pipeline_figure=figure_html(pipeline_time_figure(pipelines), "fig-pipelines"),
        job_figure=figure_html(job_time_figure(report.jobs), "fig-jobs"),
        touching=touching,
        touching_url=f"/p/{quote(project.slug)}/changes"
        + (f"?{urlencode({'job': job})}" if job else ""),
        open_by_job=open_by_job,
    )
    return render(request, "overview.html", context)
