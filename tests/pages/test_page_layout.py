"""What the reductions and recommendations pages list, and how, in a real Chromium: only
explosions whose cut saves time, largest saving first (with a "show all" link); each job's
tests listed once, in columns that do not run over each other; plotly's mode bar clear of
every title and legend."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from typing import Any

import httpx
import lxml.html  # type: ignore[import-untyped]
import pytest

from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.pages.conftest import Watched, watch
from tests.uploads import upload_all

pytestmark = pytest.mark.browser

SPLIT = {"jobs": "3", "granularity": "test", "overhead": "1s"}


def grid(function: str, axes: dict[str, list[str]], seconds: float) -> list[dict[str, Any]]:
    """Every combination of the axes' values as one variant of `function`, `seconds` each."""
    combos: list[dict[str, str]] = [{}]
    for name, values in axes.items():
        combos = [{**c, name: v} for c in combos for v in values]
    return [
        {
            "nodeid": f"tests/test_grid.py::{function}[{'-'.join(c.values())}]",
            "function": function,
            "params": "-".join(c.values()),
            "param_values": {k: repr(v) for k, v in c.items()},
            "duration_s": seconds,
        }
        for c in combos
    ]


def report() -> bytes:
    tests = [
        # Strength 1 keeps 3 of 9 (saves 6 s x 2 = 12 s); of 4 keeps 2 (saves 2 x 3 = 6 s).
        *grid("test_big", {"a": ["x", "y", "z"], "b": ["p", "q", "r"]}, 2.0),
        *grid("test_small", {"c": ["1", "2"], "d": ["u", "v"]}, 3.0),
        # One argument: every value must run, so its cut saves nothing.
        *grid("test_single", {"e": ["k", "l", "m"]}, 9.0),
        # Long nodeids, to be wrapped inside their column.
        *(
            {"nodeid": f"tests/test_long_{'x' * 60}.py::test_{i}_{'y' * 50}", "duration_s": 5.0}
            for i in range(12)
        ),
    ]
    for test in tests:
        file, _, name = test["nodeid"].partition("::")
        test.setdefault("file", file)
        test.setdefault("function", name)
        test.setdefault("outcome", "passed")
        test.setdefault("markers", [])
    doc = {"format": "laptime-json", "version": 1, "session": {"wall_s": 200.0}, "tests": tests}
    return json.dumps(doc).encode()


@pytest.fixture(scope="module")
def project(live_server: LiveServer, engine: Any) -> ProjectFixture:
    project = make_project(engine, public=True)
    upload_all(live_server, project.upload_token, [("unit.json", report(), {"job": "unit"})])
    return project


@pytest.fixture(scope="module")
def watched(browser: object, live_server: LiveServer) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    yield watch(context, live_server.url)
    context.close()


def explosion_rows(html: str) -> list[tuple[str, str]]:
    doc = lxml.html.fromstring(html)
    return [
        (tr.cssselect("td")[0].text_content(), tr.cssselect("td")[6].text_content())
        for tr in doc.cssselect("#explosion-table tbody tr")
    ]


def test_reductions_list_only_cuts_that_save_time_largest_first(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    url = f"{live_server.url}/p/{project.slug}/reductions"
    page = httpx.get(url, timeout=60)
    assert page.status_code == 200
    rows = explosion_rows(page.text)
    assert [name for name, _ in rows] == [
        "tests/test_grid.py::test_big",
        "tests/test_grid.py::test_small",
    ]
    doc = lxml.html.fromstring(page.text)
    (link,) = doc.cssselect("#explosion-filter a")
    assert link.text_content() == "Show all 3"
    every = httpx.get(live_server.url + link.get("href"), timeout=60)
    names = [name for name, _ in explosion_rows(every.text)]
    assert names == [*(n for n, _ in rows), "tests/test_grid.py::test_single"]


def test_each_jobs_tests_listed_once_in_columns_that_do_not_overlap(
    watched: Watched, live_server: LiveServer, project: ProjectFixture
) -> None:
    page = watched.page
    query = "&".join(f"{k}={v}" for k, v in SPLIT.items())
    page.goto(f"{live_server.url}/p/{project.slug}/recommendations?{query}")  # type: ignore[attr-defined]
    assert page.inner_text("[data-stat=verdict]") == "split"  # type: ignore[attr-defined]
    table = page.locator("#plan-jobs")  # type: ignore[attr-defined]
    # Collapsed, no test is listed; opened, each is listed once.
    assert "test_grid.py" not in table.inner_text()
    for summary in table.locator("td.members > details:not(.args) > summary").all():
        summary.click()
    text = table.inner_text()
    for i in range(12):
        assert text.count(f"::test_{i}_{'y' * 50}") == 1
    for name in ("test_big", "test_small", "test_single"):
        assert text.count(f"::{name}[") >= 1
    boxes = page.evaluate(  # type: ignore[attr-defined]
        """() => [...document.querySelectorAll('#plan-jobs tr')].map(tr =>
            [...tr.children].map(td => {
                const r = td.getBoundingClientRect();
                return {left: r.left, right: r.right, fits: td.scrollWidth <= td.clientWidth};
            }))"""
    )
    for cells in boxes:
        assert all(cell["fits"] for cell in cells), cells
        for a, b in itertools.pairwise(cells):
            assert a["right"] <= b["left"] + 0.5, cells
    assert watched.problems == []


def overlapping(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["x"] < b["x"] + b["width"]
        and b["x"] < a["x"] + a["width"]
        and a["y"] < b["y"] + b["height"]
        and b["y"] < a["y"] + a["height"]
    )


def test_the_mode_bar_covers_no_title_or_legend(
    watched: Watched, live_server: LiveServer, project: ProjectFixture
) -> None:
    page = watched.page
    query = "&".join(f"{k}={v}" for k, v in SPLIT.items())
    checked = 0
    for path in ("", "/time", f"/recommendations?{query}"):
        page.goto(f"{live_server.url}/p/{project.slug}{path}")  # type: ignore[attr-defined]
        page.wait_for_selector(".js-plotly-plot .main-svg")  # type: ignore[attr-defined]
        for plot in page.locator(".js-plotly-plot").all():  # type: ignore[attr-defined]
            plot.scroll_into_view_if_needed()
            plot.hover()  # the mode bar shows while the pointer is over the chart
            bar = plot.locator(".modebar").bounding_box()
            assert bar is not None
            for label in plot.locator(".gtitle, .legend, .annotation, .g-xtitle").all():
                box = label.bounding_box()
                assert box is None or not overlapping(bar, box), (path, box, bar)
                checked += 1
    assert checked >= 5
