"""Every page over plain HTTP: status, auth, and the key numbers in the parsed HTML."""

from __future__ import annotations

import ast
import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import lxml.html  # type: ignore[import-untyped]
import plotly
import psycopg
import pytest
from sqlalchemy import Engine

from app.http.session import SESSION_COOKIE
from tests.conftest import Database, ProjectFixture, make_project
from tests.pages.conftest import (
    AUGMIX_A,
    RESIZE,
    Site,
    result_row,
    session_cookies,
    sign_in_form,
    store_rows,
)

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def fetch(site: Site, path: str, *, token: str | None = None) -> httpx.Response:
    cookies = session_cookies(site.url, token) if token else None
    return httpx.get(f"{site.url}{path}", cookies=cookies, follow_redirects=False, timeout=60)


def page(site: Site, path: str, *, token: str | None = None) -> lxml.html.HtmlElement:
    response = fetch(site, path, token=token)
    assert response.status_code == 200, (path, response.status_code, response.text[:500])
    assert response.headers["content-type"].startswith("text/html")
    return lxml.html.fromstring(response.text)


def stat(doc: lxml.html.HtmlElement, name: str) -> str:
    (node,) = doc.cssselect(f'[data-stat="{name}"]')
    return " ".join(node.text_content().split())


def column(doc: lxml.html.HtmlElement, table_id: str, index: int) -> list[str]:
    return [
        " ".join(row.cssselect("td")[index].text_content().split())
        for row in doc.cssselect(f"table#{table_id} tbody tr")
    ]


def test_home_redirects_to_projects(site: Site) -> None:
    response = fetch(site, "/")
    assert response.status_code == 303
    assert response.headers["location"] == "/projects"


def test_projects_list_shows_public_and_own_private_project_only(site: Site) -> None:
    anonymous = page(site, "/projects").text_content()
    assert site.public.slug in anonymous
    assert site.private.slug not in anonymous
    signed_in = page(site, "/projects", token=site.private.read_token).text_content()
    assert site.private.slug in signed_in
    assert site.public.slug in signed_in


def test_private_project_redirects_anonymous_visitor_to_sign_in(site: Site) -> None:
    response = fetch(site, f"/p/{site.private.slug}/time?days=7")
    assert response.status_code == 303
    location = urlsplit(response.headers["location"])
    assert location.path == "/signin"
    query = parse_qs(location.query)
    assert query["next"] == [f"/p/{site.private.slug}/time?days=7"]
    assert query["reason"] == ["private"]
    form = page(site, response.headers["location"])
    assert "This project is private" in form.text_content()
    assert form.cssselect('input[name="next"]')[0].get("value") == query["next"][0]


def test_sign_in_page_shows_no_text_from_the_link(site: Site) -> None:
    crafted = fetch(site, "/signin?reason=Your+token+leaked&message=Paste+it+at+evil.example")
    assert crafted.status_code == 200
    assert "leaked" not in crafted.text
    assert "evil.example" not in crafted.text


def test_forged_session_cookie_is_cleared_and_sent_to_sign_in(site: Site) -> None:
    forged = {SESSION_COOKIE: "1.9999999999.bm90LWEtc2lnbmF0dXJl"}
    response = httpx.get(f"{site.url}/p/{site.private.slug}", cookies=forged)
    assert response.status_code == 303
    assert "reason=stale" in response.headers["location"]
    assert f'{SESSION_COOKIE}=""' in response.headers["set-cookie"]


def test_token_of_another_project_is_refused(site: Site) -> None:
    response = fetch(site, f"/p/{site.private.slug}", token=site.public.read_token)
    assert response.status_code == 403
    assert "another project" in response.text


def test_sign_in_sets_a_signed_httponly_session_and_returns_to_next(site: Site) -> None:
    with httpx.Client(base_url=site.url) as client:
        fields = sign_in_form(client)
        response = client.post(
            "/signin",
            data={
                **fields,
                "token": site.private.read_token,
                "next": f"/p/{site.private.slug}/time",
            },
        )
    assert response.status_code == 303
    assert response.headers["location"] == f"/p/{site.private.slug}/time"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{SESSION_COOKIE}=")
    assert "HttpOnly" in cookie
    assert "samesite=lax" in cookie.lower()
    # The cookie names the token by id, signed: no part of the secret token is in it.
    value = response.cookies[SESSION_COOKIE]
    secret_part = site.private.read_token.split("_", 2)[2]
    assert site.private.read_token not in value
    assert not any(secret_part[i : i + 8] in value for i in range(len(secret_part) - 8))


def test_sign_in_refuses_unknown_and_upload_only_tokens(site: Site) -> None:
    with httpx.Client(base_url=site.url) as client:
        fields = sign_in_form(client)
        unknown = client.post("/signin", data={**fields, "token": "nope"})
        assert unknown.status_code == 401
        assert "unknown, expired or revoked" in unknown.text
        upload_only = client.post("/signin", data={**fields, "token": site.private.upload_token})
    assert upload_only.status_code == 401
    assert "cannot read dashboards" in upload_only.text
    assert SESSION_COOKIE not in upload_only.headers.get("set-cookie", "")


def test_sign_in_never_redirects_off_site(site: Site) -> None:
    with httpx.Client(base_url=site.url) as client:
        fields = sign_in_form(client)
        response = client.post(
            "/signin",
            data={**fields, "token": site.private.read_token, "next": "//evil.example/x"},
        )
    assert response.headers["location"] == f"/p/{site.private.slug}"


def test_overview_numbers(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}")
    assert stat(doc, "pipelines") == "2"
    assert stat(doc, "wait") == "5 min"  # 300 s, the gpu job
    assert stat(doc, "machine") == "7 min 10 s"  # 130 + 300 s
    assert stat(doc, "setup") == "41.9%"  # (30 + 150) / 430
    jobs = dict(zip(column(doc, "jobs", 0), column(doc, "jobs", 3), strict=True))
    assert jobs == {"gpu": "5 min", "cpu": "2 min 10 s"}
    assert column(doc, "jobs", 5) == ["2 min 30 s", "30.0 s"]  # setup overhead per job
    assert column(doc, "pipelines", 4) == ["5 min", "5 min"]
    assert len(doc.cssselect("#fig-pipelines")) == 1
    assert len(doc.cssselect("#fig-jobs")) == 1


def test_overview_lists_failed_upload_with_its_error(site: Site) -> None:
    doc = page(site, f"/p/{site.private.slug}", token=site.private.read_token)
    rows = doc.cssselect("table#uploads tbody tr")
    failed = [r for r in rows if r.cssselect("td")[0].text_content() == str(site.failed_upload_id)]
    assert len(failed) == 1
    assert "failed" in failed[0].get("class")
    assert failed[0].cssselect(".error-message code")[0].text_content().strip()
    assert len(rows) == 5  # four stored runs and the failed upload


def test_pages_load_plotly_from_the_app_itself(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}")
    scripts = [s.get("src") for s in doc.cssselect("script[src]")]
    assert scripts[0] == f"/static/plotly-{plotly.__version__}.min.js"
    assert len(scripts) == 2  # and our script that draws the figures
    response = httpx.get(f"{site.url}{scripts[0]}", headers={"Accept-Encoding": "identity"})
    assert response.status_code == 200
    assert response.headers["cache-control"] == "public, max-age=31536000, immutable"
    assert response.content == PLOTLY_JS.read_bytes()
    zipped = httpx.get(f"{site.url}{scripts[0]}", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip"
    assert zipped.content == PLOTLY_JS.read_bytes()  # httpx inflates it
    (css,) = doc.cssselect('link[rel="stylesheet"]')
    assert httpx.get(f"{site.url}{css.get('href')}").headers["cache-control"].endswith("immutable")
    assert fetch(site, "/static/secrets.txt").status_code == 404


def test_time_page_numbers(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}/time")
    assert stat(doc, "total") == "8 min 20 s"  # 500 s
    files = dict(zip(column(doc, "files", 0), column(doc, "files", 2), strict=True))
    assert files == {"tests/test_models.py": "80.0%", "tests/test_transforms.py": "20.0%"}
    functions = dict(zip(column(doc, "functions", 0), column(doc, "functions", 2), strict=True))
    assert functions["tests/test_transforms.py::test_augmix"] == "80.0%"
    assert functions["tests/test_models.py::test_resnet"] == "100.0%"
    for fig in ("fig-treemap", "fig-pareto", "fig-markers", "fig-jobs", "fig-label-0"):
        assert doc.cssselect(f"#{fig}"), fig
    text = doc.text_content()
    assert "Share by device" in text


def test_filters_in_the_url_change_the_numbers_and_links_keep_them(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}/time?job=cpu&days=7")
    assert stat(doc, "total") == "3 min 20 s"  # the cpu runs only: 200 s
    files = dict(zip(column(doc, "files", 0), column(doc, "files", 2), strict=True))
    assert files["tests/test_models.py"] == "50.0%"
    overview_tab = doc.cssselect("nav.tabs a")[0].get("href")
    assert overview_tab == f"/p/{site.public.slug}?job=cpu&days=7"
    selected = doc.cssselect('select[name="job"] option[selected]')
    assert [o.get("value") for o in selected] == ["cpu"]


def test_empty_filter_values_are_dropped_by_redirect(site: Site) -> None:
    response = fetch(site, f"/p/{site.public.slug}/time?days=7&job=&branch=&marker=slow")
    assert response.status_code == 303
    assert response.headers["location"] == f"/p/{site.public.slug}/time?days=7&marker=slow"


def test_marker_filter(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}/time?marker=slow")
    assert stat(doc, "total") == "6 min 40 s"  # test_resnet only: 400 s


def test_file_drill_down_lists_functions_with_their_share_of_the_file(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}/files/tests/test_transforms.py")
    assert stat(doc, "file-total") == "1 min 40 s"
    assert stat(doc, "file-share") == "20.0%"
    shares = dict(zip(column(doc, "functions", 0), column(doc, "functions", 2), strict=True))
    assert shares == {"test_augmix": "80.0%", "test_resize": "20.0%"}
    tests = column(doc, "tests", 0)
    assert tests[0] == "test_augmix[a]"
    link = doc.cssselect("table#tests a")[0].get("href")
    assert link == f"/p/{site.public.slug}/test?nodeid={quote(AUGMIX_A, safe='')}"


def test_time_page_links_a_function_to_its_file(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}/time?days=30")
    links = {a.text_content(): a.get("href") for a in doc.cssselect("table#functions a")}
    assert (
        links["tests/test_transforms.py::test_augmix"]
        == f"/p/{site.public.slug}/files/tests/test_transforms.py?days=30"
    )


def test_unknown_file_is_a_404_page(site: Site) -> None:
    response = fetch(site, f"/p/{site.public.slug}/files/tests/nope.py")
    assert response.status_code == 404
    assert "no test time" in response.text


def test_test_page_history_outcomes_flaky_and_variants(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}/test?nodeid={quote(AUGMIX_A)}")
    assert stat(doc, "results") == "2"
    assert stat(doc, "p50") == "30.0 s"
    assert stat(doc, "flaky") == "1"
    assert stat(doc, "outcomes").startswith("2 passed 0 failed")
    variants = dict(zip(column(doc, "variants", 0), column(doc, "variants", 2), strict=True))
    assert variants == {"test_augmix[a]": "75.0%", "test_augmix[b]": "25.0%"}
    assert column(doc, "flaky", 3) == ["2"]
    assert "timeout on first attempt" in column(doc, "flaky", 4)[0]
    assert doc.cssselect("#fig-history")
    assert doc.cssselect("#fig-variants")


def test_test_page_of_unparametrized_test(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}/test?nodeid={quote(RESIZE)}")
    assert stat(doc, "p50") == "10.0 s"
    assert stat(doc, "flaky") == "0"
    assert not doc.cssselect("#fig-variants")


def test_unknown_test_is_a_404_page(site: Site) -> None:
    response = fetch(site, f"/p/{site.public.slug}/test?nodeid=nope")
    assert response.status_code == 404


@pytest.mark.parametrize("query", ["", "?jobs=2&granularity=file"])
def test_recommendations_page_shows_the_api_plan(site: Site, query: str) -> None:
    slug = site.public.slug
    api = httpx.get(f"{site.url}/api/v1/projects/{slug}/recommendations/split{query}", timeout=60)
    assert api.status_code == 200, api.text
    plan = api.json()
    doc = page(site, f"/p/{slug}/recommendations{query}")
    from figures.humanize import duration_text

    assert stat(doc, "verdict") == plan["verdict"].replace("_", " ")
    assert stat(doc, "wait-after") == duration_text(plan["after"]["wait_s"])
    assert stat(doc, "machine-after") == duration_text(plan["after"]["machine_s"])
    assert column(doc, "plan-jobs", 0) == [j["name"] for j in plan["jobs"]]
    assert doc.cssselect("#fig-gantt")
    machines = httpx.get(f"{site.url}/api/v1/projects/{slug}/recommendations/machines")
    section = doc.cssselect("#machines")[0].text_content()
    if machines.status_code == 200:
        assert doc.cssselect("#machines table.sizing")
    else:
        assert machines.json()["detail"].split(":")[0] in section


def test_recommendations_page_reports_bad_options_without_failing(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}/recommendations?jobs=x")
    assert "is not a job count" in doc.cssselect(".notice")[0].text_content()


# ------------------------------------------------------------------------ the reductions page
# A small project of its own (so the shared history's numbers stay put), two pipelines on a
# feature branch, each running the same tests on python 3.11 and 3.12:
#   test_grid: 8 variants (x in 1/2, y in 'a'/'b', z in True/False, values as the plugin
#     records them), 2 s each -> 16 s per run; with test_plain (4 s) its file is 20 s: 80.0%.
#     Strength 1 keeps 2 rows (4 s, saves 12 s = 75.0%), strength 2 keeps 4 (saves 8 s, 50.0%).
#   test_grid.py: same outcomes and durations on both pythons -> reduce, keep 3.12 (the tie
#     goes to the higher version); drops the 3.11 runs: 2 pipelines x 20 s = 40 s over 2 days.
#   test_io.py::test_read passes on 3.12 and fails on 3.11 on both commits -> keep.
GRID_VALUES = {"x": ("1", "2"), "y": ("'a'", "'b'"), "z": ("True", "False")}


def _grid_rows(python: str) -> list[dict[str, Any]]:
    rows = []
    for x, y, z in itertools.product(*GRID_VALUES.values()):
        params = f"{x}-{y.strip(chr(39))}-{z}"
        rows.append(
            result_row(
                f"tests/test_grid.py::test_grid[{params}]",
                2.0,
                param_values={"x": x, "y": y, "z": z},
            )
        )
    rows.append(result_row("tests/test_grid.py::test_plain", 4.0, param_values=None))
    outcome = "passed" if python == "3.12" else "failed"
    rows.append(result_row("tests/test_io.py::test_read", 1.0, param_values=None, outcome=outcome))
    return rows


@pytest.fixture(scope="module")
def reductions_project(site: Site, database: Database, engine: Engine) -> ProjectFixture:
    """The public project described above."""
    project = make_project(engine, public=True)
    midnight = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    with psycopg.connect(database.dsn) as conn:
        for index in range(2):
            started = midnight - timedelta(days=3 - index, hours=-1)
            for python in ("3.11", "3.12"):
                store_rows(
                    conn,
                    project.id,
                    _grid_rows(python),
                    job=f"py{python.replace('.', '')}",
                    pipeline=f"q{index + 1}",
                    started_at=started,
                    wall_s=60.0,
                    branch="feature",
                    labels={"python": python},
                )
    return project


def _parametrize_rows(code: str) -> list[tuple[object, ...]]:
    """The value tuples of a `@pytest.mark.parametrize` block, parsed as Python."""
    module = ast.parse(code + "\ndef test_it(): pass\n")
    (function,) = module.body
    assert isinstance(function, ast.FunctionDef)
    (decorator,) = function.decorator_list
    assert isinstance(decorator, ast.Call)
    assert ast.unparse(decorator.func) == "pytest.mark.parametrize"
    names, values = decorator.args
    assert ast.literal_eval(names) == "x,y,z"
    return [tuple(row) for row in ast.literal_eval(values)]


def test_reductions_page_shows_the_explosion_and_its_covering_code(
    site: Site, reductions_project: ProjectFixture
) -> None:
    doc = page(site, f"/p/{reductions_project.slug}/reductions")
    assert column(doc, "explosion-table", 0) == ["tests/test_grid.py::test_grid"]
    assert column(doc, "explosion-table", 1) == ["8"]
    assert column(doc, "explosion-table", 2) == ["16.0 s"]
    assert column(doc, "explosion-table", 3) == ["80.0%"]
    assert column(doc, "explosion-table", 4) == ["plugin"]
    assert column(doc, "explosion-table", 5) == ["2 of 8"]  # strength 1
    assert column(doc, "explosion-table", 6) == ["12.0 s (75.0%)"]
    assert column(doc, "explosion-table", 7) == ["4 of 8"]  # strength 2
    assert column(doc, "explosion-table", 8) == ["8.0 s (50.0%)"]
    (article,) = doc.cssselect('article.explosion[data-test="tests/test_grid.py::test_grid"]')
    every_value = _parametrize_rows(article.cssselect('pre.code[data-strength="1"]')[0].text)
    every_pair = _parametrize_rows(article.cssselect('pre.code[data-strength="2"]')[0].text)
    # The values are the plugin's reprs, so the pasted code holds the real Python objects.
    domains = [(1, 2), ("a", "b"), (True, False)]
    assert len(every_value) == 2
    for position, domain in enumerate(domains):
        assert {row[position] for row in every_value} == set(domain)
    assert len(every_pair) == 4
    for i, j in itertools.combinations(range(3), 2):
        pairs = {(row[i], row[j]) for row in every_pair}
        assert pairs == set(itertools.product(domains[i], domains[j])), (i, j)


def test_reductions_page_shows_the_matrix_verdicts(
    site: Site, reductions_project: ProjectFixture
) -> None:
    doc = page(site, f"/p/{reductions_project.slug}/reductions")
    verdicts = {
        (group, dim): verdict
        for group, dim, verdict in zip(
            column(doc, "matrix-table", 0),
            column(doc, "matrix-table", 1),
            column(doc, "matrix-table", 3),
            strict=True,
        )
    }
    assert verdicts == {
        ("tests/test_grid.py", "python"): "reduce",
        ("tests/test_io.py", "python"): "keep",
    }
    reduce_text, keep_text = column(doc, "matrix-table", 5)
    assert reduce_text.startswith("On pull requests run python=3.12 only")
    assert "saves 40.0 s of machine time in the window (20.0 s a day)" in reduce_text
    assert "2 test/commit cell(s) passed on one value and failed on another" in keep_text
    evidence = [
        " ".join(li.text_content().split()) for li in doc.cssselect("#matrix-table ul.evidence li")
    ]
    assert len(evidence) == 2  # one per commit
    assert all(
        e.startswith("tests/test_io.py::test_read on c0ffeeq")
        and e.endswith("passed on 3.12, failed on 3.11")
        for e in evidence
    )


def test_reductions_page_of_the_shared_history(site: Site) -> None:
    # test_augmix[a]/[b]: one argument, so its cut saves nothing: listed under "show all".
    saving = page(site, f"/p/{site.public.slug}/reductions?days=30")
    assert saving.cssselect("#explosion-table") == []
    assert "Show all 1" in saving.cssselect("#explosion-filter")[0].text_content()
    doc = page(site, f"/p/{site.public.slug}/reductions?days=30&show=all")
    # Its values come from the ids; 40 s of the file's 50 s.
    assert column(doc, "explosion-table", 0) == ["tests/test_transforms.py::test_augmix"]
    assert column(doc, "explosion-table", 3) == ["80.0%"]
    assert column(doc, "explosion-table", 4) == ["inferred from ids"]
    assert "arg0" in doc.cssselect('pre.code[data-strength="2"]')[0].text
    # test_resnet: 50 s on the cpu job, 150 s on the gpu one, same commit -> keep.
    assert column(doc, "matrix-table", 3) == ["keep"]
    assert "cpu 50.0 s, gpu 2 min 30 s (3.0×)" in column(doc, "matrix-table", 5)[0]
    # The tabs and the link back keep the filters; the Recommendations tab stays current.
    (current,) = doc.cssselect('nav.tabs a[aria-current="page"]')
    assert current.get("href") == f"/p/{site.public.slug}/recommendations?days=30"
    back = doc.cssselect("nav.subtabs a")[0].get("href")
    assert back == f"/p/{site.public.slug}/recommendations?days=30"


def test_recommendations_page_links_to_the_reductions(site: Site) -> None:
    doc = page(site, f"/p/{site.public.slug}/recommendations?job=cpu")
    links = [a.get("href") for a in doc.cssselect("nav.subtabs a")]
    assert f"/p/{site.public.slug}/reductions?job=cpu" in links


@pytest.mark.parametrize(
    ("query", "notice"),
    [
        ("?branch=no-such-branch", "no test results in this window"),
        ("?threshold=0.5", "threshold must be above 1"),
        ("?top=many", "top must be a whole number"),
        ("?by=os", "group by must be file or marker"),
    ],
)
def test_reductions_page_explains_what_it_cannot_answer(
    site: Site, query: str, notice: str
) -> None:
    doc = page(site, f"/p/{site.public.slug}/reductions{query}")
    assert notice in doc.cssselect(".notice")[0].text_content()
    assert not doc.cssselect("#explosions, #matrix")


PAGE_PARAMS: dict[str, tuple[str, ...]] = {
    "": ("days", "branch", "job", "label", "marker", "exclude_marker", "file"),
    "/time": ("by", "days", "since", "until", "label"),
    "/test": ("nodeid",),
    "/recommendations": ("jobs", "granularity", "objective", "overhead", "budget", "cell"),
    "/reductions": ("top", "by", "threshold", "show"),
}
HOSTILE_VALUES = ("%00", "a%00b", "0001-01-01", "-1", "9" * 30, "x" * 3000)


@pytest.mark.parametrize("value", HOSTILE_VALUES)
def test_no_page_answers_5xx_to_hostile_parameters(site: Site, value: str) -> None:
    # Pages are outside the OpenAPI schema (schemathesis does not reach them): every page
    # parameter, and the slug and file path, get NUL bytes, old dates and huge numbers.
    cookies = session_cookies(site.url, site.private.read_token)
    base = f"/p/{site.private.slug}"
    paths = [
        f"{base}{tail}?{name}={value}" for tail, names in PAGE_PARAMS.items() for name in names
    ]
    paths += [f"/p/{value}", f"{base}/files/{value}", f"/signin?next={value}"]
    with httpx.Client(base_url=site.url, cookies=cookies, timeout=60) as client:
        statuses = {path: client.get(path).status_code for path in paths}
    assert {path: s for path, s in statuses.items() if s >= 500} == {}
