"""One test: duration history, outcomes, flaky runs and its parametrize variants."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

import pandas as pd
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from analysis.rollups.shares import function_keys
from app.http.deps import ConnDep
from app.http.params import FiltersDep, NodeidText
from app.pages.changes import changes_touching
from app.pages.common import (
    TABLE_ROWS,
    PageError,
    PageProject,
    only_file,
    project_context,
    render,
)
from app.services.case_reads import load_test_case, load_test_history
from app.services.changes import ChangeQuery
from app.services.project_reads import project_rollup
from figures.history_figures import duration_history_figure, variants_figure
from figures.theme import figure_html

router = APIRouter(include_in_schema=False)


@router.get("/p/{slug}/test", response_class=HTMLResponse)
def case_page(
    request: Request, project: PageProject, conn: ConnDep, filters: FiltersDep, nodeid: NodeidText
) -> Any:
    """One test: duration history, outcomes, flaky runs and its parametrize variants."""
    case = load_test_case(conn, project.id, nodeid)
    if case is None:
        raise PageError(404, f"no test {nodeid!r} in this project")
    history = load_test_history(conn, project.id, int(case["test_id"]), filters)
    function_key = str(function_keys(pd.Series([nodeid]), pd.Series([case["params"]]))[0])
    variants = pd.DataFrame()
    if case["file"]:
        in_file = only_file(filters, str(case["file"]))
        by_test = project_rollup(conn, project.id, in_file, by="test", within="function")
        variants = by_test.rows.loc[by_test.rows["parent"] == function_key]
    outcomes = history["outcome"].value_counts()
    flaky = history.loc[history["flaky"] | (history["attempts"] > 1)]
    failures = history.loc[history["outcome"].isin(("failed", "error"))]
    timed = history["duration_s"].dropna()
    context = project_context(
        request,
        conn,
        project,
        "time",
        case=case,
        function_key=function_key,
        results=len(history),
        outcomes={o: int(outcomes.get(o, 0)) for o in ("passed", "failed", "error", "skipped")},
        duration={
            "p50": float(timed.median()) if len(timed) else None,
            "max": float(timed.max()) if len(timed) else None,
            "total": float(timed.sum()),
        },
        flaky_rows=flaky.head(TABLE_ROWS).to_dict(orient="records"),
        flaky_count=len(flaky),
        failure_rows=failures.head(10).to_dict(orient="records"),
        variant_rows=variants.head(TABLE_ROWS * 4).to_dict(orient="records"),
        variants_total=len(variants),
        history_figure=figure_html(duration_history_figure(history), "fig-history"),
        variants_figure=figure_html(variants_figure(variants, current=nodeid), "fig-variants")
        if len(variants) > 1
        else None,
        touching=changes_touching(conn, project, ChangeQuery(tests=(nodeid,))),
        touching_url=f"/p/{quote(project.slug)}/changes?{urlencode({'test': nodeid})}",
    )
    return render(request, "test.html", context)
