"""Where the time goes: treemap, Pareto of files, shares by marker/job/label, phases."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from sqlalchemy import Connection

from analysis.filters import Filters
from analysis.rollups.shares import Rollup, check_dimension
from app.http.deps import ConnDep
from app.http.params import FiltersDep
from app.pages.common import TABLE_ROWS, PageProject, project_context, render
from app.services.project_reads import FrameCache, project_rollup
from figures.theme import figure_html
from figures.time_split import pareto_figure, phase_figure, share_figure, treemap_figure

router = APIRouter(include_in_schema=False)

# Treemap sizes: enough to see the structure, few enough for a browser to lay out quickly.
TREEMAP_FILES = 40
TREEMAP_FUNCTIONS = 300
TREEMAP_TESTS = 600


# Share charts drawn for at most this many label keys: 60 keys drew 60 charts (10,800 px);
# the other keys are links to their "split by" table.
LABEL_CHARTS = 6


def chart_label_keys(label_pairs: list[str], *, limit: int = LABEL_CHARTS) -> list[str]:
    """Label keys ordered for share charts: most distinct values first (a key with one value is
    one 100% bar), then by name."""
    values: dict[str, set[str]] = {}
    for pair in label_pairs:
        key, _, value = pair.partition("=")
        values.setdefault(key, set()).add(value)
    return sorted(values, key=lambda k: (-len(values[k]), k))[:limit]


def _label_rollups(
    conn: Connection,
    project_id: int,
    filters: Filters,
    keys: list[str],
    cache: FrameCache | None = None,
) -> dict[str, Rollup]:
    return {
        key: project_rollup(conn, project_id, filters, by=f"label:{key}", cache=cache)
        for key in keys
    }


# The dimensions the "split by" table offers besides one per label key.
SPLIT_DIMENSIONS = ("file", "function", "test", "marker", "job", "machine", "branch")


@router.get("/p/{slug}/time", response_class=HTMLResponse)
def time_page(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    filters: FiltersDep,
    by: Annotated[str, Query(max_length=200)] = "file",
) -> Any:
    """Where the time goes: treemap, Pareto of files, shares by marker/job/label, phases, and
    every rollup figure of one dimension (`by`) as a table."""
    check_dimension(by)
    cache = FrameCache.for_project(conn, project.id)
    files = project_rollup(conn, project.id, filters, by="file", cache=cache)
    functions = project_rollup(
        conn,
        project.id,
        filters,
        by="function",
        within="file",
        limit=TREEMAP_FUNCTIONS,
        cache=cache,
    )
    tests = project_rollup(
        conn, project.id, filters, by="test", within="function", limit=TREEMAP_TESTS, cache=cache
    )
    markers = project_rollup(conn, project.id, filters, by="marker", cache=cache)
    jobs = project_rollup(conn, project.id, filters, by="job", cache=cache)
    context = project_context(request, conn, project, "time")
    label_pairs = context["choices"]["label"]
    all_keys = sorted({pair.partition("=")[0] for pair in label_pairs})
    charted = chart_label_keys(label_pairs)
    labels = _label_rollups(conn, project.id, filters, charted, cache)
    split = project_rollup(conn, project.id, filters, by=by, limit=TABLE_ROWS, cache=cache)
    grand = files.grand_total_s
    phases = {p: float(files.rows[p].sum(min_count=1)) for p in ("setup_s", "call_s", "teardown_s")}
    share_figures = [
        figure_html(share_figure(markers.rows, title="Share by marker"), "fig-markers"),
        figure_html(share_figure(jobs.rows, title="Share by job"), "fig-jobs"),
    ] + [
        # The element id is an index: a label key is report data (figure_html refuses names).
        figure_html(share_figure(r.rows, title=f"Share by {key}"), f"fig-label-{index}")
        for index, (key, r) in enumerate(labels.items())
    ]
    context.update(
        files=files,
        file_rows=files.rows.head(TABLE_ROWS).to_dict(orient="records"),
        function_rows=functions.rows.head(TABLE_ROWS).to_dict(orient="records"),
        phases=phases,
        treemap=figure_html(
            treemap_figure(
                files.rows.head(TREEMAP_FILES), functions.rows, tests.rows, grand_total_s=grand
            ),
            "fig-treemap",
        ),
        pareto=figure_html(pareto_figure(files.rows, grand_total_s=grand), "fig-pareto"),
        phase_chart=figure_html(phase_figure(files.rows), "fig-phases"),
        share_figures=share_figures,
        split=split,
        split_rows=split.rows.to_dict(orient="records"),
        split_dimensions=[*SPLIT_DIMENSIONS, *(f"label:{key}" for key in all_keys)],
        more_labels=[key for key in all_keys if key not in labels],
    )
    return render(request, "time.html", context)
