"""The dashboard: server-rendered pages over the same reads the REST API serves.

Every page takes the API's query parameters (`days`, `branch`, `job`, `label`, `marker`...),
so a filtered view is a URL that can be shared. A visitor without a token on a private
project is redirected (303) to the sign-in page, which stores a read token in an httponly
cookie.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote, urlencode

import pandas as pd
import plotly
from fastapi import APIRouter, Depends, FastAPI, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from sqlalchemy import Connection

from analysis.filters import Filters
from analysis.rollups import Rollup, function_keys
from analysis.split_plan import SplitOptions, parse_duration_s
from app.api.deps import TOKEN_COOKIE, ConnDep, authorize, presented_token
from app.api.params import FiltersDep
from app.db.projects import Project, list_projects, resolve_token
from app.db.queries import filter_choices, load_test_case, load_test_history
from app.db.uploads import recent_uploads
from app.pages.format import register_filters
from app.project_reads import FrameCache, project_pipelines, project_rollup
from app.recommend import (
    load_history,
    machines_recommendation,
    matrix_recommendation,
    parametrize_recommendation,
    split_recommendation,
)
from dashboards.pipelines import job_time_figure, pipeline_time_figure
from dashboards.split_gantt import split_gantt_figure
from dashboards.test_history import duration_history_figure, variants_figure
from dashboards.theme import figure_html
from dashboards.time_split import (
    pareto_figure,
    phase_figure,
    share_figure,
    treemap_figure,
    within_file_figure,
)

HERE = Path(__file__).parent
TEMPLATES = Jinja2Templates(directory=str(HERE / "templates"))
register_filters(TEMPLATES.env)

# The query parameters app.api.params.query_filters reads: links between pages keep them.
FILTER_PARAMS = (
    "days", "since", "until", "branch", "job", "label", "marker", "exclude_marker", "file",
)  # fmt: skip
WINDOWS_DAYS = (7, 14, 30, 90, 365)
# Treemap sizes: enough to see the structure, few enough for a browser to lay out quickly.
TREEMAP_FILES = 40
TREEMAP_FUNCTIONS = 300
TREEMAP_TESTS = 600
TABLE_ROWS = 25
# The reductions page proposes covering sets of both strengths side by side.
COVERING_STRENGTHS = (1, 2)

PLOTLY_JS = Path(str(importlib.resources.files("plotly") / "package_data" / "plotly.min.js"))
CSS_FILE = HERE / "static" / "laptime.css"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:10]


# Versioned names: the content behind a URL never changes, so browsers may cache it forever.
STATIC_FILES: dict[str, tuple[Path, str]] = {
    f"plotly-{plotly.__version__}.min.js": (PLOTLY_JS, "text/javascript"),
    f"laptime-{_digest(CSS_FILE)}.css": (CSS_FILE, "text/css"),
}
PLOTLY_URL, CSS_URL = (f"/static/{name}" for name in STATIC_FILES)
LONG_CACHE = "public, max-age=31536000, immutable"

router = APIRouter(include_in_schema=False)


class SignInRequired(Exception):
    """The visitor must sign in to see this page."""

    def __init__(self, next_url: str, message: str, *, clear_cookie: bool = False) -> None:
        super().__init__(message)
        self.next_url = next_url
        self.message = message
        self.clear_cookie = clear_cookie


class RedirectTo(Exception):
    """Send the visitor to another URL (303)."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.url = url


class PageError(Exception):
    """A page that cannot be shown (403, 404, 422): rendered as an error page."""

    def __init__(self, status_code: int, message: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.message = message


def mount(app: FastAPI) -> None:
    """Add the dashboard's routes and error pages to the app."""
    app.include_router(router)
    app.add_exception_handler(SignInRequired, _redirect_to_sign_in)  # type: ignore[arg-type]
    app.add_exception_handler(PageError, _error_page)  # type: ignore[arg-type]
    app.add_exception_handler(RedirectTo, _redirect)  # type: ignore[arg-type]


def _redirect(request: Request, exc: RedirectTo) -> Response:
    return RedirectResponse(exc.url, status_code=303)


def _redirect_to_sign_in(request: Request, exc: SignInRequired) -> Response:
    query = urlencode({"next": exc.next_url, "message": exc.message})
    response = RedirectResponse(f"/signin?{query}", status_code=303)
    if exc.clear_cookie:
        response.delete_cookie(TOKEN_COOKIE, path="/")
    return response


def _error_page(request: Request, exc: PageError) -> Response:
    return render(
        request, "error.html", {"status": exc.status_code, "message": exc.message}, exc.status_code
    )


def render(
    request: Request, template: str, context: dict[str, Any], status_code: int = 200
) -> HTMLResponse:
    """A template rendered with the layout's shared context."""
    base = {
        "plotly_url": PLOTLY_URL,
        "css_url": CSS_URL,
        "signed_in": bool(presented_token(request)),
    }
    response: HTMLResponse = TEMPLATES.TemplateResponse(
        request, template, {**base, **context}, status_code=status_code
    )
    return response


def _here(request: Request) -> str:
    return request.url.path + (f"?{request.url.query}" if request.url.query else "")


def page_project(request: Request, conn: ConnDep, slug: str) -> Project:
    """Dependency: the project in the path if this visitor may read it, else sign-in/error."""
    items = request.query_params.multi_items()
    if any(k in FILTER_PARAMS and not v for k, v in items):
        # The filter bar's "all" options submit empty values; an empty filter is no filter.
        kept = urlencode([(k, v) for k, v in items if v or k not in FILTER_PARAMS])
        raise RedirectTo(request.url.path + (f"?{kept}" if kept else ""))
    try:
        return authorize(request, conn, slug, "read")
    except HTTPException as exc:
        if exc.status_code == 401:
            stale = presented_token(request) is not None
            message = (
                "Your saved token is no longer valid: sign in again."
                if stale
                else "This project is private: sign in with a read token."
            )
            raise SignInRequired(_here(request), message, clear_cookie=stale) from exc
        raise PageError(exc.status_code, str(exc.detail)) from exc


PageProject = Annotated[Project, Depends(page_project)]


class Links:
    """Builds page URLs that keep the current filters (the view stays shareable)."""

    def __init__(self, request: Request, slug: str) -> None:
        self.slug = slug
        self.filters = [(k, v) for k, v in request.query_params.multi_items() if k in FILTER_PARAMS]

    def query(self, **extra: Any) -> str:
        """`?days=30&job=unit...` with extra parameters added (None drops one)."""
        pairs = [(k, v) for k, v in self.filters if k not in extra]
        pairs += [(k, v) for k, v in extra.items() if v is not None]
        return f"?{urlencode(pairs)}" if pairs else ""

    def page(self, tab: str = "", **extra: Any) -> str:
        """A project page URL: "" overview, "time", "recommendations"."""
        return f"/p/{quote(self.slug)}" + (f"/{tab}" if tab else "") + self.query(**extra)

    def file(self, path: str) -> str:
        """The drill-down page of one test file."""
        return f"/p/{quote(self.slug)}/files/{quote(path)}" + self.query()

    def test(self, nodeid: str) -> str:
        """The page of one test."""
        return f"/p/{quote(self.slug)}/test" + self.query(nodeid=nodeid)


def project_context(
    request: Request, conn: Connection, project: Project, tab: str, **extra: Any
) -> dict[str, Any]:
    """What every project page's layout shows: tabs, the filter bar and its menus."""
    params = request.query_params
    return {
        "project": project,
        "tab": tab,
        "links": Links(request, project.slug),
        "choices": filter_choices(conn, project.id),
        "selected": {name: params.getlist(name) for name in FILTER_PARAMS},
        "days": params.get("days", "30"),
        "windows": WINDOWS_DAYS,
        **extra,
    }


# --------------------------------------------------------------------------------- static


@cache
def _gzipped(name: str) -> bytes:
    return gzip.compress(STATIC_FILES[name][0].read_bytes(), compresslevel=6)


@router.get("/static/{name}")
def static_file(request: Request, name: str) -> Response:
    """plotly.js from the installed plotly package and our CSS, cached for a year."""
    if name not in STATIC_FILES:
        raise PageError(404, f"no static file {name!r}")
    path, media_type = STATIC_FILES[name]
    headers = {"Cache-Control": LONG_CACHE, "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(_gzipped(name), media_type=media_type, headers=headers)
    return Response(path.read_bytes(), media_type=media_type, headers=headers)


# -------------------------------------------------------------------------------- sign-in


def _safe_next(raw: str | None) -> str | None:
    # Only same-site paths: an open redirect would let a link send a signed-in user anywhere.
    if raw and raw.startswith("/") and not raw.startswith("//") and "\\" not in raw:
        return raw
    return None


@router.get("/signin", response_class=HTMLResponse)
def sign_in_form(request: Request, next: str | None = None, message: str | None = None) -> Any:
    """The sign-in form: paste a read (or admin) token."""
    return render(request, "signin.html", {"next": _safe_next(next) or "", "message": message})


@router.post("/signin")
def sign_in(
    request: Request,
    conn: ConnDep,
    token: Annotated[str, Form()],
    next: Annotated[str, Form()] = "",
) -> Response:
    """Check the token and keep it in an httponly cookie; back to where the visitor was."""
    grant = resolve_token(conn, token.strip())
    if grant is None or not grant.allows("read"):
        message = (
            "That token is unknown or revoked."
            if grant is None
            else f"A token with scope {grant.scope!r} cannot read dashboards: use a read token."
        )
        return render(
            request, "signin.html", {"next": _safe_next(next) or "", "message": message}, 401
        )
    target = _safe_next(next) or f"/p/{quote(grant.project.slug)}"
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        TOKEN_COOKIE,
        token.strip(),
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/",
        max_age=30 * 86400,
    )
    return response


@router.post("/signout")
def sign_out() -> Response:
    """Forget the sign-in cookie."""
    response = RedirectResponse("/projects", status_code=303)
    response.delete_cookie(TOKEN_COOKIE, path="/")
    return response


# ---------------------------------------------------------------------------------- pages


@router.get("/", response_class=HTMLResponse)
def home() -> Response:
    """The dashboard starts at the projects list."""
    return RedirectResponse("/projects", status_code=303)


@router.get("/projects", response_class=HTMLResponse)
def projects_page(request: Request, conn: ConnDep) -> Any:
    """Public projects, and the project of the signed-in token."""
    token = presented_token(request)
    grant = resolve_token(conn, token) if token else None
    visible = [
        p
        for p in list_projects(conn)
        if p.public or (grant is not None and grant.project.id == p.id)
    ]
    return render(request, "projects.html", {"projects": visible, "grant": grant})


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
    pipelines = report.pipelines.pipelines
    context = project_context(
        request,
        conn,
        project,
        "overview",
        headline=_headline(pipelines),
        summary=report.pipelines,
        jobs=report.jobs.to_dict(orient="records"),
        recent=pipelines.head(TABLE_ROWS).to_dict(orient="records"),
        uploads=recent_uploads(conn, project.id, limit=15),
        pipeline_figure=figure_html(pipeline_time_figure(pipelines), "fig-pipelines"),
        job_figure=figure_html(job_time_figure(report.jobs), "fig-jobs"),
    )
    return render(request, "overview.html", context)


def _label_rollups(
    conn: Connection,
    project_id: int,
    filters: Filters,
    label_pairs: list[str],
    cache: FrameCache | None = None,
) -> dict[str, Rollup]:
    keys = sorted({pair.split("=", 1)[0] for pair in label_pairs})
    return {
        key: project_rollup(conn, project_id, filters, by=f"label:{key}", cache=cache)
        for key in keys
    }


@router.get("/p/{slug}/time", response_class=HTMLResponse)
def time_page(request: Request, project: PageProject, conn: ConnDep, filters: FiltersDep) -> Any:
    """Where the time goes: treemap, Pareto of files, shares by marker/job/label, phases."""
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
    labels = _label_rollups(conn, project.id, filters, context["choices"]["label"], cache)
    grand = files.grand_total_s
    phases = {p: float(files.rows[p].sum(min_count=1)) for p in ("setup_s", "call_s", "teardown_s")}
    share_figures = [
        figure_html(share_figure(markers.rows, title="Share by marker"), "fig-markers"),
        figure_html(share_figure(jobs.rows, title="Share by job"), "fig-jobs"),
    ] + [
        figure_html(share_figure(r.rows, title=f"Share by {key}"), f"fig-label-{key}")
        for key, r in labels.items()
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
    )
    return render(request, "time.html", context)


def _glob_literal(path: str) -> str:
    """An fnmatch pattern matching exactly `path` (brackets, * and ? taken literally)."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in path)


@router.get("/p/{slug}/files/{path:path}", response_class=HTMLResponse)
def file_page(
    request: Request, project: PageProject, conn: ConnDep, filters: FiltersDep, path: str
) -> Any:
    """One file: its functions with their share of the file, and its costliest tests."""
    only_file = replace(filters, files=(_glob_literal(path),))
    functions = project_rollup(conn, project.id, only_file, by="function", within="file")
    if functions.rows.empty:
        raise PageError(404, f"no test time for file {path!r} in this window")
    tests = project_rollup(
        conn, project.id, only_file, by="test", within="function", limit=TABLE_ROWS
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
    )
    return render(request, "file.html", context)


@router.get("/p/{slug}/test", response_class=HTMLResponse)
def test_page(
    request: Request, project: PageProject, conn: ConnDep, filters: FiltersDep, nodeid: str
) -> Any:
    """One test: duration history, outcomes, flaky runs and its parametrize variants."""
    case = load_test_case(conn, project.id, nodeid)
    if case is None:
        raise PageError(404, f"no test {nodeid!r} in this project")
    history = load_test_history(conn, project.id, int(case["test_id"]), filters)
    function_key = str(function_keys(pd.Series([nodeid]), pd.Series([case["params"]]))[0])
    variants = pd.DataFrame()
    if case["file"]:
        in_file = replace(filters, files=(_glob_literal(str(case["file"])),))
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
    )
    return render(request, "test.html", context)


def _job_range(raw: str) -> tuple[int, int]:
    low, sep, high = raw.partition("-")
    try:
        return int(low), int(high) if sep else int(low)
    except ValueError:
        raise ValueError(f"jobs: {raw!r} is not N or N-M") from None


def _seconds(raw: str | None) -> float | None:
    return parse_duration_s(raw) if raw else None


@router.get("/p/{slug}/recommendations", response_class=HTMLResponse)
def recommendations_page(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    filters: FiltersDep,
    jobs: str = "2-6",
    granularity: str = "auto",
    objective: str = "wait",
    overhead: str | None = None,
    budget: str | None = None,
    cell: str | None = None,
) -> Any:
    """The split plan as a before/after Gantt, machine sizing, and the config to copy."""
    plan: dict[str, Any] | None = None
    machines: dict[str, Any] | None = None
    error: str | None = None
    machines_error: str | None = None
    try:
        options = SplitOptions(
            jobs=_job_range(jobs),
            granularity=granularity,  # type: ignore[arg-type]
            overhead_s=_seconds(overhead),
            budget_s=_seconds(budget),
            objective=objective,  # type: ignore[arg-type]
        )
    except ValueError as exc:
        error = str(exc)
    else:
        # The answer only changes with the data, the question and the project's catalogue.
        key = (
            "recommendations",
            repr(filters),
            repr(options),
            cell,
            project.catalogue,
            project.catalogue_toml,
        )
        plan, error, machines, machines_error = FrameCache.for_project(conn, project.id).get(
            key, lambda: _plan_and_machines(conn, project, filters, options, cell or None)
        )
    context = project_context(
        request,
        conn,
        project,
        "recommendations",
        plan=plan,
        error=error,
        form={
            "jobs": jobs,
            "granularity": granularity,
            "objective": objective,
            "overhead": overhead or "",
            "budget": budget or "",
            "cell": cell or "",
        },
        gantt=figure_html(split_gantt_figure(plan), "fig-gantt") if plan else None,
        machines=machines,
        machines_error=machines_error,
    )
    return render(request, "recommendations.html", context)


def _plan_and_machines(
    conn: Connection, project: Project, filters: Filters, options: SplitOptions, cell: str | None
) -> tuple[dict[str, Any] | None, str | None, dict[str, Any] | None, str | None]:
    """(plan, its error, machine sizing, its error) for the recommendations page."""
    try:
        history = load_history(conn, project, filters, one_cell=True, cell=cell)
        plan = split_recommendation(
            conn, project, filters, options=options, cell=cell, history=history
        )
    except ValueError as exc:  # RecommendationError and CatalogueError are ValueErrors
        return None, str(exc), None, None
    try:
        # Sizing the proposed jobs re-plans the split: only worth it when there is one.
        machines = machines_recommendation(
            conn,
            project,
            filters,
            cell=plan["cell"],
            split_options=options if plan["verdict"] == "split" else None,
            history=history,
        )
    except ValueError as exc:
        return plan, None, None, str(exc)
    return plan, None, machines, None


def _explosions_by_strength(
    conn: Connection, project: Project, filters: Filters, top: int
) -> list[dict[str, Any]]:
    """Each explosion once, with its covering proposal (or the reason there is none) per
    strength."""
    merged: dict[str, dict[str, Any]] = {}
    for strength in COVERING_STRENGTHS:
        answer = parametrize_recommendation(conn, project, filters, strength=strength, top=top)
        for entry in answer["explosions"]:
            explosion = entry["explosion"]
            row = merged.setdefault(
                explosion["test"], {"explosion": explosion, "proposals": {}, "note": None}
            )
            row["proposals"][strength] = entry["proposal"]
            row["note"] = row["note"] or entry.get("note")
    return list(merged.values())


def _reduction_options(top: str, by: str, threshold: str) -> tuple[int, str, float]:
    try:
        top_n, ratio = int(top), float(threshold)
    except ValueError:
        raise ValueError(
            f"top must be a whole number and threshold a number, got {top!r}, {threshold!r}"
        ) from None
    if not 1 <= top_n <= 100:
        raise ValueError(f"top must be between 1 and 100, got {top_n}")
    if by not in ("file", "marker"):
        raise ValueError(f"group by must be file or marker, got {by!r}")
    if not ratio > 1:
        raise ValueError(f"threshold must be above 1, got {threshold}")
    return top_n, by, ratio


@router.get("/p/{slug}/reductions", response_class=HTMLResponse)
def reductions_page(
    request: Request,
    project: PageProject,
    conn: ConnDep,
    filters: FiltersDep,
    top: str = "10",
    by: str = "file",
    threshold: str = "1.5",
) -> Any:
    """Cut what need not run: covering sets for parametrize explosions, CI-matrix verdicts."""
    explosions: list[dict[str, Any]] | None = None
    matrix: dict[str, Any] | None = None
    error: str | None = None
    try:
        top_n, group_by, ratio = _reduction_options(top, by, threshold)
        explosions = _explosions_by_strength(conn, project, filters, top_n)
        matrix = matrix_recommendation(conn, project, filters, group_by=group_by, threshold=ratio)
    except ValueError as exc:  # RecommendationError (no data) is a ValueError
        error = str(exc)
    context = project_context(
        request,
        conn,
        project,
        "recommendations",
        explosions=explosions,
        matrix=matrix,
        strengths=COVERING_STRENGTHS,
        error=error,
        form={"top": top, "by": by, "threshold": threshold},
    )
    return render(request, "reductions.html", context)
