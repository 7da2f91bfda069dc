"""One test file: its functions with their share of the file, and its costliest tests."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse

from app.http.deps import ConnDep
from app.http.params import FiltersDep
from app.pages.changes import changes_touching
from app.pages.common import (
    TABLE_ROWS,
    PageError,
    PageProject,
    only_file,
    project_context,
    render,
)
from app.services.changes import ChangeQuery
from app.services.project_reads import project_rollup
from figures.theme import figure_html
from figures.time_split import within_file_figure

router = APIRouter(include_in_schema=False)


@router.get("/p/{slug}/files/{path:path}", response_class=HTMLResponse)
def file_page(
    request: Request, project: PageProject, conn: ConnDep, filters: FiltersDep, path: str
) -> Any:
    """One file: its functions with their share of the file, and its costliest tests."""
    in_file = only_file(filters, path)
    functions = project_rollup(conn, project.id, in_file, by="function", within="file")
    if functions.rows.empty:
        raise PageError(404, f"no test time for file {path!r} in this window")
    tests = project_rollup(
        conn, project.id, in_file, by="test", within="function", limit=TABLE_ROWS
    )
    everything = project_rollup(conn, project.id, filters, by="job")
    context = project_context(
        request,
        conn,
        project,
        "time",
        path=path,
        file_total_s=functions.grand_total_s,
        project_total_s=everything.grand_total_s,
        function_rows=functions.rows.to_dict(orient="records"),
        test_rows=tests.rows.to_dict(orient="records"),
        tests_total=tests.keys_total,
        figure=figure_html(within_file_figure(functions.rows), "fig-functions"),
        touching=changes_touching(conn, project, ChangeQuery(files=(path,))),
        touching_url=f"/p/{quote(project.slug)}/changes?{urlencode({'file': path})}",
    )
    return render(request, "file.html", context)
