"""Every page over plain HTTP: status, auth, and the key numbers in the parsed HTML."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import lxml.html  # type: ignore[import-untyped]
import plotly
import pytest

from app.api.deps import TOKEN_COOKIE
from tests.pages.conftest import AUGMIX_A, RESIZE, Site

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def fetch(site: Site, path: str, *, token: str | None = None) -> httpx.Response:
    cookies = {TOKEN_COOKIE: token} if token else None
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
    assert "private" in query["message"][0]
    form = page(site, response.headers["location"])
    assert "This project is private" in form.text_content()
    assert form.cssselect('input[name="next"]')[0].get("value") == query["next"][0]


def test_revoked_cookie_is_cleared_and_sent_to_sign_in(site: Site) -> None:
    response = fetch(site, f"/p/{site.private.slug}", token="lt_read_not-a-real-token")
    assert response.status_code == 303
    assert "no+longer+valid" in response.headers["location"]
    assert f'{TOKEN_COOKIE}=""' in response.headers["set-cookie"]


def test_token_of_another_project_is_refused(site: Site) -> None:
    response = fetch(site, f"/p/{site.private.slug}", token=site.public.read_token)
    assert response.status_code == 403
    assert "another project" in response.text


def test_sign_in_sets_an_httponly_cookie_and_returns_to_next(site: Site) -> None:
    response = httpx.post(
        f"{site.url}/signin",
        data={"token": site.private.read_token, "next": f"/p/{site.private.slug}/time"},
        follow_redirects=False,
    )
    assert response.status_code == 303
    assert response.headers["location"] == f"/p/{site.private.slug}/time"
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{TOKEN_COOKIE}={site.private.read_token};")
    assert "HttpOnly" in cookie
    assert "samesite=lax" in cookie.lower()


def test_sign_in_refuses_unknown_and_upload_only_tokens(site: Site) -> None:
    unknown = httpx.post(f"{site.url}/signin", data={"token": "nope"}, follow_redirects=False)
    assert unknown.status_code == 401
    assert "unknown or revoked" in unknown.text
    upload_only = httpx.post(
        f"{site.url}/signin", data={"token": site.private.upload_token}, follow_redirects=False
    )
    assert upload_only.status_code == 401
    assert "cannot read dashboards" in upload_only.text
    assert "set-cookie" not in upload_only.headers


def test_sign_in_never_redirects_off_site(site: Site) -> None:
    response = httpx.post(
        f"{site.url}/signin",
        data={"token": site.private.read_token, "next": "//evil.example/x"},
        follow_redirects=False,
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
    assert scripts == [f"/static/plotly-{plotly.__version__}.min.js"]
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
    for fig in ("fig-treemap", "fig-pareto", "fig-markers", "fig-jobs", "fig-label-device"):
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
    from dashboards.humanize import duration_text

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
    assert "is not N or N-M" in doc.cssselect(".notice")[0].text_content()
