"""The dashboard in a real headless Chromium: no console errors, no failed requests, charts
drawn, filters that change the data, sign-in, and refusal of anonymous visitors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.pages.conftest import AUGMIX_A, Site, Watched, watch

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def signed_in(browser: object, site: Site) -> Iterator[Watched]:
    """A browser context signed in to the private project through the sign-in form."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    watched = watch(context, site.url)
    page = watched.page
    page.goto(f"{site.url}/signin?next=/p/{site.private.slug}/time")  # type: ignore[attr-defined]
    page.fill('input[name="token"]', site.private.read_token)  # type: ignore[attr-defined]
    page.click('form.stack button[type="submit"]')  # type: ignore[attr-defined]
    page.wait_for_url(f"**/p/{site.private.slug}/time")  # type: ignore[attr-defined]
    yield watched
    context.close()


def test_sign_in_form_lands_on_the_requested_page(signed_in: Watched, site: Site) -> None:
    page = signed_in.page
    assert page.url == f"{site.url}/p/{site.private.slug}/time"  # type: ignore[attr-defined]
    cookies = page.context.cookies()  # type: ignore[attr-defined]
    (cookie,) = [c for c in cookies if c["name"] == "laptime_session"]
    assert cookie["httpOnly"] is True
    # Scripts cannot read it.
    assert "laptime_session" not in page.evaluate("document.cookie")  # type: ignore[attr-defined]


PAGES = [
    ("projects", "/projects", 0),
    ("overview", "/p/{slug}", 2),
    ("time", "/p/{slug}/time", 6),
    ("file", "/p/{slug}/files/tests/test_transforms.py", 1),
    ("test", "/p/{slug}/test?nodeid=" + quote(AUGMIX_A), 2),
    ("recommendations", "/p/{slug}/recommendations", 1),
    ("reductions", "/p/{slug}/reductions", 0),
]


@pytest.mark.parametrize(("name", "path", "charts"), PAGES)
def test_page_loads_clean_with_its_charts(
    signed_in: Watched, site: Site, tmp_path: Path, name: str, path: str, charts: int
) -> None:
    page = signed_in.page
    signed_in.problems.clear()
    response = page.goto(site.url + path.format(slug=site.private.slug))  # type: ignore[attr-defined]
    assert response.status == 200
    # Drawn under the strict policy: a refused inline script would be a console error below.
    assert "script-src 'self';" in response.headers["content-security-policy"]
    if charts:
        page.wait_for_selector(".plot-container .main-svg")  # type: ignore[attr-defined]
        drawn = page.locator(".plot-container").count()  # type: ignore[attr-defined]
        assert drawn >= charts
        assert page.locator(".js-plotly-plot .main-svg").count() >= charts  # type: ignore[attr-defined]
    page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)  # type: ignore[attr-defined]
    assert signed_in.problems == []


def test_treemap_draws_files_and_functions(signed_in: Watched, site: Site) -> None:
    page = signed_in.page
    page.goto(f"{site.url}/p/{site.private.slug}/time")  # type: ignore[attr-defined]
    page.wait_for_selector("#fig-treemap .main-svg")  # type: ignore[attr-defined]
    labels = page.locator("#fig-treemap g.slice text").all_text_contents()  # type: ignore[attr-defined]
    joined = " ".join(labels)
    assert "tests/test_models.py" in joined
    assert "test_augmix" in joined


def test_changing_a_filter_changes_the_data(signed_in: Watched, site: Site, tmp_path: Path) -> None:
    page = signed_in.page
    signed_in.problems.clear()
    page.goto(f"{site.url}/p/{site.private.slug}/time")  # type: ignore[attr-defined]
    total = page.locator('[data-stat="total"]')  # type: ignore[attr-defined]
    assert total.text_content() == "8 min 20 s"
    page.select_option('select[name="job"]', "cpu")  # type: ignore[attr-defined]
    page.click('#filters button[type="submit"]')  # type: ignore[attr-defined]
    page.wait_for_url("**job=cpu**")  # type: ignore[attr-defined]
    assert total.text_content() == "3 min 20 s"
    assert "branch=" not in page.url  # type: ignore[attr-defined]  # "all" filters are dropped
    page.wait_for_selector("#fig-pareto .main-svg")  # type: ignore[attr-defined]
    page.screenshot(path=str(tmp_path / "time-cpu.png"), full_page=True)  # type: ignore[attr-defined]
    # The tabs keep the filter: the overview now shows the cpu job alone.
    page.click("nav.tabs a >> text=Overview")  # type: ignore[attr-defined]
    page.wait_for_url("**job=cpu**")  # type: ignore[attr-defined]
    assert page.locator('[data-stat="wait"]').text_content() == "2 min 10 s"  # type: ignore[attr-defined]
    assert signed_in.problems == []


def test_anonymous_visitor_of_a_private_project_is_refused(browser: object, site: Site) -> None:
    context = browser.new_context()  # type: ignore[attr-defined]
    try:
        page = context.new_page()
        response = page.goto(f"{site.url}/p/{site.private.slug}")
        assert page.url.startswith(f"{site.url}/signin?")
        assert response.request.redirected_from.response().status == 303
        assert "This project is private" in page.locator(".notice").text_content()
        # None of the project's data reached the visitor.
        assert page.locator("[data-stat], .plot-container, table.data").count() == 0
    finally:
        context.close()


def test_public_project_needs_no_sign_in(browser: object, site: Site, tmp_path: Path) -> None:
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    try:
        watched = watch(context, site.url)
        page = watched.page
        response = page.goto(f"{site.url}/p/{site.public.slug}")  # type: ignore[attr-defined]
        assert response.status == 200
        page.wait_for_selector("#fig-pipelines .main-svg")  # type: ignore[attr-defined]
        page.screenshot(path=str(tmp_path / "public-overview.png"), full_page=True)  # type: ignore[attr-defined]
        assert watched.problems == []
    finally:
        context.close()
