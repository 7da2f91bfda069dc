"""Every page reads well at 1400 and 800 px on a small and an odd project, in a real Chromium.

The odd project is one run with 60 labels, 10,000 files, names of 300 characters (paths and
.NET-style class names) and a 96-variant explosion whose parameter values are unknown; the
small one is the two-pipeline history of tests/pages/conftest.py. On every page at both
widths: a chart with data draws its bars with a visible width, a cartesian plot area fills
most of its chart, no name column is squeezed, the page does not overflow sideways and its
height is bounded. Screenshots land in a temporary directory named in the test output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import lxml.html  # type: ignore[import-untyped]
import psycopg
import pytest
from sqlalchemy import Engine

from tests.conftest import Database, LiveServer, make_project
from tests.pages.conftest import AUGMIX_A, Site, result_row, store_rows, watch

pytestmark = pytest.mark.browser

FILES = 10_000
LABELS = 60
LONG_PATH = "tests/" + "a_rather_deeply_nested_package/" * 9 + "test_" + "x" * 9 + ".py"
DOTNET = "Contoso.Commerce.Ordering.Infrastructure.Persistence.IntegrationTests.{}"
DOTNET_CLASSES = [
    DOTNET.format(f"SqlServerOrderRepositoryWhenSavingAggregatesWithManyLineItemsTests{i}")
    for i in range(8)
]
LONG_FUNCTION = "test_" + "when_the_order_has_many_line_items_" * 8
EXPLOSION = "tests/test_explode.py::test_explode"
# Ids that split into different numbers of "-" parts: the values cannot be inferred.
EXPLOSION_IDS = [f"v{i}" + ("-alt" if i % 2 else "") for i in range(96)]


def odd_rows() -> list[dict[str, Any]]:
    """The odd project's single run (see the module docstring)."""
    rows = [
        result_row(f"tests/pkg{i % 50:02d}/test_mod_{i:05d}.py::test_case", 0.1 + (i % 97) * 0.01)
        for i in range(FILES)
    ]
    rows += [result_row(f"{LONG_PATH[:-3]}_{i}.py::{LONG_FUNCTION}{i}", 40.0 + i) for i in range(4)]
    rows += [
        {
            **result_row(f"{name}::Handles_{i}_concurrent_writers_without_losing_updates", 60.0),
            "file": name,
            "classname": name,
        }
        for i in range(3)
        for name in DOTNET_CLASSES
    ]
    rows += [result_row(f"{EXPLOSION}[{params}]", 30.0) for params in EXPLOSION_IDS]
    # A smaller explosion whose values are known, so a cut that saves time is listed too.
    for a in ("x", "y", "z"):
        for b in ("p", "q", "r"):
            row = result_row(f"tests/test_grid.py::test_grid[{a}-{b}]", 2.0)
            row["param_values"] = {"a": repr(a), "b": repr(b)}
            rows.append(row)
    return rows


@dataclass(frozen=True)
class Project:
    slug: str
    file: str
    nodeid: str


@pytest.fixture(scope="module")
def odd(database: Database, engine: Engine) -> Project:
    project = make_project(engine, public=True)
    labels = {f"label_{i:02d}": f"value-{i}" for i in range(LABELS)}
    with psycopg.connect(database.dsn) as conn:
        store_rows(
            conn,
            project.id,
            odd_rows(),
            job="one-job-" + "j" * 60,
            pipeline="only",
            started_at=datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2),
            wall_s=12000.0,
            labels=labels,
        )
    return Project(project.slug, file=DOTNET_CLASSES[0], nodeid=f"{EXPLOSION}[{EXPLOSION_IDS[0]}]")


@pytest.fixture(scope="module")
def small(site: Site) -> Project:
    return Project(site.public.slug, file="tests/test_transforms.py", nodeid=AUGMIX_A)


PAGES = {
    "projects": "/projects",
    "overview": "/p/{slug}",
    "time": "/p/{slug}/time",
    "split-by-file": "/p/{slug}/time?by=file",
    "split-by-test": "/p/{slug}/time?by=test",
    "file": "/p/{slug}/files/{file}",
    "test": "/p/{slug}/test?nodeid={nodeid}",
    "recommendations": "/p/{slug}/recommendations",
    "reductions": "/p/{slug}/reductions",
    "accuracy": "/p/{slug}/recommendations/accuracy",
}
WIDTHS = (1400, 800)
# The tallest a page may be: a few screens of charts and tables, not one chart per label.
MAX_PAGE_HEIGHT_PX = 9000
# A name column narrower than this wraps a path every few characters.
MIN_NAME_COLUMN_PX = 140
# A cartesian plot area narrower than this share of its chart has lost it to tick labels.
MIN_PLOT_SHARE = 0.70

MEASURE = """() => {
  const doc = document.documentElement;
  const plots = [...document.querySelectorAll('.js-plotly-plot')].map(plot => {
    const box = plot.getBoundingClientRect();
    const areas = [...plot.querySelectorAll('.nsewdrag')].map(r => r.getBoundingClientRect().width);
    const bars = [...plot.querySelectorAll('g.trace.bars path')].map(p => {
      const r = p.getBoundingClientRect();
      return Math.min(r.width, r.height);
    });
    const hasBars = plot.querySelectorAll('g.trace.bars').length > 0;
    return {id: plot.id, width: box.width, areas, hasBars, widestBar: Math.max(0, ...bars)};
  });
  const tables = [...document.querySelectorAll('table.data')].map(table => {
    const heads = [...table.querySelectorAll('thead th')];
    const cells = [...table.querySelectorAll('tbody tr')].map(tr => tr.children[0])
      .filter(td => td && td.colSpan === 1);
    const longest = Math.max(0, ...cells.map(td => td.textContent.trim().length));
    const lineHeight = parseFloat(getComputedStyle(table).lineHeight) || 20;
    // The height of a cell's text, not of its row (a neighbour's text may make the row tall).
    const textHeight = td => {
      const range = document.createRange();
      range.selectNodeContents(td);
      return range.getBoundingClientRect().height;
    };
    const tall = [...table.querySelectorAll('tbody td:not(.num)')].filter(td =>
      td.textContent.trim().length > 30 && td.querySelectorAll('details, ul, pre').length === 0 &&
      // Wrapped every few characters: more than two lines of fewer than 16 characters each.
      textHeight(td) > 2.5 * lineHeight &&
      td.textContent.trim().length / (textHeight(td) / lineHeight) < 16).map(td =>
      td.textContent.trim().slice(0, 40) +
      ' @' + Math.round(td.getBoundingClientRect().width) + 'px');
    const first = heads.length ? heads[0].getBoundingClientRect().width : 0;
    return {id: table.id || table.className, first, longest, tall};
  });
  // The outermost elements past the right edge: what makes the page overflow.
  const wide = [...document.querySelectorAll('body *')].filter(el =>
    el.getBoundingClientRect().right > window.innerWidth + 1 &&
    el.parentElement.getBoundingClientRect().right <= window.innerWidth + 1).slice(0, 3).map(el =>
    el.tagName + '.' + el.className + ' ' + el.textContent.trim().slice(0, 30));
  return {scrollWidth: doc.scrollWidth, innerWidth: window.innerWidth, wide,
          height: doc.scrollHeight, plots, tables};
}"""


@pytest.fixture(scope="module")
def screens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # LAPTIME_SCREENSHOTS keeps them where pytest's temporary directories are not pruned.
    kept = os.environ.get("LAPTIME_SCREENSHOTS")
    path = Path(kept) if kept else tmp_path_factory.mktemp("screens")
    path.mkdir(parents=True, exist_ok=True)
    print(f"screenshots: {path}")
    return path


@pytest.fixture(scope="module")
def pages(browser: object, live_server: LiveServer) -> Iterator[dict[int, Any]]:
    """One page per width, in the session's one Chromium."""
    contexts = {
        w: browser.new_context(viewport={"width": w, "height": 900})  # type: ignore[attr-defined]
        for w in WIDTHS
    }
    yield {w: watch(c, live_server.url) for w, c in contexts.items()}
    for context in contexts.values():
        context.close()


def faults(measured: dict[str, Any]) -> list[str]:
    """Everything that makes a page hard to read, from one MEASURE."""
    found = []
    if measured["scrollWidth"] > measured["innerWidth"] + 1:
        found.append(f"page overflows sideways: {measured['scrollWidth']}px {measured['wide']}")
    if measured["height"] > MAX_PAGE_HEIGHT_PX:
        found.append(f"page is {measured['height']}px tall")
    for plot in measured["plots"]:
        if plot["hasBars"] and plot["widestBar"] < 2:
            found.append(f"{plot['id']}: bars have no visible width ({plot['widestBar']}px)")
        for area in plot["areas"]:
            # Subplots side by side would each be narrower; the pages draw them stacked.
            if area < MIN_PLOT_SHARE * plot["width"]:
                found.append(f"{plot['id']}: plot area {area:.0f} of {plot['width']:.0f}px")
    for table in measured["tables"]:
        if table["longest"] > 24 and table["first"] < MIN_NAME_COLUMN_PX:
            found.append(f"table {table['id']}: name column {table['first']:.0f}px")
        if table["tall"]:
            found.append(f"table {table['id']}: cells wrap into many lines {table['tall'][:3]}")
    return found


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("which", ["small", "odd"])
def test_every_page_reads_well(
    request: pytest.FixtureRequest,
    pages: dict[int, Any],
    live_server: LiveServer,
    screens: Path,
    which: str,
    width: int,
) -> None:
    project: Project = request.getfixturevalue(which)
    watched = pages[width]
    page = watched.page
    found: dict[str, list[str]] = {}
    for name, path in PAGES.items():
        watched.problems.clear()
        url = live_server.url + path.format(
            slug=project.slug, file=quote(project.file), nodeid=quote(project.nodeid)
        )
        response = page.goto(url, timeout=120_000)
        assert response.status == 200, (name, response.status)
        if page.locator("script.figure-data").count():
            page.wait_for_selector(".js-plotly-plot .main-svg")
        page.wait_for_load_state("load")
        page.screenshot(path=str(screens / f"{which}-{width}-{name}.png"), full_page=True)
        problems = faults(page.evaluate(MEASURE)) + watched.problems
        if problems:
            found[name] = problems
    assert not found, json.dumps(found, indent=1)


def test_label_charts_are_capped_with_a_link_to_the_rest(
    live_server: LiveServer, odd: Project
) -> None:
    page = httpx.get(f"{live_server.url}/p/{odd.slug}/time", timeout=120)
    assert page.status_code == 200
    doc = lxml.html.fromstring(page.text)
    charts = doc.cssselect("script.figure-data")
    assert len(charts) <= 12, len(charts)
    more = doc.cssselect("#more-labels a")
    assert len(more) == LABELS - 6
    assert all("by=label%3A" in a.get("href") or "by=label:" in a.get("href") for a in more)


def test_an_explosion_with_unknown_values_is_listed_as_unknown(
    live_server: LiveServer, odd: Project
) -> None:
    page = httpx.get(f"{live_server.url}/p/{odd.slug}/reductions", timeout=120)
    assert page.status_code == 200
    doc = lxml.html.fromstring(page.text)
    rows = {
        tr.cssselect("td")[0].text_content().strip(): tr
        for tr in doc.cssselect("#explosion-table tbody tr")
    }
    assert "tests/test_explode.py::test_explode" in rows, list(rows)
    assert "tests/test_grid.py::test_grid" in rows
    unknown = rows["tests/test_explode.py::test_explode"]
    assert unknown.get("data-saving") == "unknown"
    assert "unknown" in unknown.cssselect("td")[6].text_content()
    hint = doc.cssselect("#explosion-filter")[0].text_content()
    assert "saves no time" not in hint, hint
