"""The "Did it come true?" page in Chromium: a plan whose job and pipeline names are
hostile is shown literally, in the table and in the figure's hover, and nothing runs."""

from __future__ import annotations

import httpx
import lxml.html  # type: ignore[import-untyped]
import pytest
from sqlalchemy import Engine

from analysis.accuracy.plan_record import PlanRecord, PredictedJob
from app.db.plans import store_plan
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.pages.conftest import Watched
from tests.pages.test_xss import ATTR, HOVER, SCRIPT, TEXT, TRACES, visitor  # noqa: F401
from tests.uploads import upload_all

pytestmark = pytest.mark.browser

JOB = f"job{ATTR}{TEXT}{HOVER}"
PIPELINE = f"pipe{SCRIPT}"
PLAN_ID = "0123456789ab"
REPORT = b'<testsuite name="s"><testcase classname="c" name="t1" time="30"/></testsuite>'


@pytest.fixture(scope="module")
def ran(live_server: LiveServer, engine: Engine) -> ProjectFixture:
    """A public project with a plan (today's hostile job, kept) and one run of it."""
    project = make_project(engine, public=True)
    plan = PlanRecord(
        PLAN_ID,
        "split",
        f"os={TEXT}",
        (PredictedJob(1, JOB, wall_s=40.0, tests_s=30.0, setup_s=10.0),),
    )
    with engine.begin() as conn:
        store_plan(conn, project.id, plan)
    fields = {"job": JOB, "pipeline": PIPELINE, "plan_id": PLAN_ID, "wall_s": 50.0}
    upload_all(live_server, project.upload_token, [("r.xml", REPORT, fields)])
    return project


def test_the_page_is_linked_and_shows_the_numbers(
    live_server: LiveServer, ran: ProjectFixture
) -> None:
    base = f"{live_server.url}/p/{ran.slug}"
    split = lxml.html.fromstring(httpx.get(f"{base}/recommendations", timeout=60).text)
    assert f"/p/{ran.slug}/recommendations/accuracy" in split.xpath(
        "//nav[@class='subtabs']//a/@href"
    )
    page = httpx.get(f"{base}/recommendations/accuracy", timeout=60)
    assert page.status_code == 200
    doc = lxml.html.fromstring(page.text)
    [row] = doc.cssselect("table.accuracy tbody tr:not(.total)")
    cells = [c.text_content().strip() for c in row.cssselect("td")]
    assert cells[0] == JOB
    assert cells[3] == "-20.0%"  # (40 - 50) / 50
    assert doc.cssselect("span.pipeline")[0].text_content() == PIPELINE
    missing = httpx.get(f"{base}/recommendations/accuracy", params={"plan": "nope"}, timeout=60)
    assert missing.status_code == 404


def test_hostile_names_show_literally_and_nothing_runs(
    visitor: tuple[Watched, list[str]],  # noqa: F811
    ran: ProjectFixture,
    live_server: LiveServer,
) -> None:
    watched, dialogs = visitor
    page = watched.page
    page.goto(f"{live_server.url}/p/{ran.slug}/recommendations/accuracy")  # type: ignore[attr-defined]
    page.wait_for_selector("#fig-accuracy .main-svg")  # type: ignore[attr-defined]
    assert page.evaluate(TRACES) == {  # type: ignore[attr-defined]
        "pwn": 0,
        "pwned": False,
        "javascriptLinks": 0,
        "boldInFigures": 0,
    }
    assert dialogs == []
    body = page.locator("body").inner_text()  # type: ignore[attr-defined]
    assert JOB in body
    assert PIPELINE in body
    point = "[{curveNumber: 1, pointNumber: 0}]"
    page.evaluate(f'Plotly.Fx.hover(document.getElementById("fig-accuracy"), {point})')  # type: ignore[attr-defined]
    page.wait_for_selector("#fig-accuracy .hoverlayer .hovertext")  # type: ignore[attr-defined]
    hover = page.locator("#fig-accuracy .hoverlayer").text_content()  # type: ignore[attr-defined]
    assert JOB in hover
    assert page.evaluate(TRACES)["boldInFigures"] == 0  # type: ignore[attr-defined]
    assert watched.problems == []
