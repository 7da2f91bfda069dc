"""Nothing a report says runs in a maintainer's browser.

Reports whose every string field (test, class, file and suite names, job, branch, label keys
and values, failure messages) carries script and HTML payloads for attribute, text, JS and
plotly hover contexts are uploaded through the real API; every page is opened in Chromium.
Nothing may run (no dialog, no injected node, no "PWNED"), and the text shows literally.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import quote, urlencode
from xml.sax.saxutils import quoteattr

import httpx
import pytest
from sqlalchemy import Engine

from figures.plot_text import NARROW_TICK_CHARS, short_name
from tests.changes_history import RUNS, STEP_AT
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.pages.conftest import Watched, watch
from tests.server.test_upload_flow import upload, wait_done
from tests.uploads import upload_all

pytestmark = pytest.mark.browser

# One payload per context; each would leave a trace if it ran: a dialog, a `.pwn` node, or
# "PWNED" in the document.
TEXT = "<img src=x onerror=alert(1) class=pwn>"
ATTR = '"><svg class=pwn onload=alert(2)>'
JS = 'y")&&document.body.prepend("PWNED"+document.domain)&&("'  # the label key
JS_SINGLE = "';document.body.prepend('PWNED');'"
HOVER = '<a href="javascript:alert(4)">evil-link</a><b class=pwn>bold</b>'
SCRIPT = "</script><script>alert(5)</script>"

JOB = f"job{ATTR}{TEXT}"
BRANCH = f"br{SCRIPT}{JS_SINGLE}"
LABEL_KEY = JS
LABEL_VALUES = (f"v1{HOVER}", f"v2{TEXT}")
SUITE = f"suite{SCRIPT}"
CLASSNAME = f"Cls{TEXT}"
FILE = f"tests/x{ATTR}.py"
FUNCTION = f"test_{JS_SINGLE}"
PARAMS = ("p1<b class=pwn>", "p2</script>")
MESSAGE = f"boom {TEXT} {SCRIPT} {HOVER}"

# Strings that must reach the page as text exactly.
LITERALS = (TEXT, JOB, LABEL_KEY)


def junit_report(extra_s: float) -> bytes:
    """Two parametrize variants (one failing) and a plain test, every name hostile."""
    cases = []
    for i, param in enumerate(PARAMS):
        failure = f"<failure message={quoteattr(MESSAGE)}>trace</failure>" if i else ""
        cases.append(
            f"<testcase classname={quoteattr(CLASSNAME)} name={quoteattr(f'{FUNCTION}[{param}]')}"
            f' file={quoteattr(FILE)} time="{3.0 + i + extra_s}">{failure}</testcase>'
        )
    cases.append(
        f"<testcase classname={quoteattr(CLASSNAME)} name={quoteattr('test_plain' + TEXT)}"
        f' file={quoteattr(FILE)} time="1.5"/>'
    )
    return (
        f'<?xml version="1.0"?><testsuites><testsuite name={quoteattr(SUITE)} tests="3">'
        + "".join(cases)
        + "</testsuite></testsuites>"
    ).encode()


@dataclass(frozen=True)
class Hostile:
    """The project holding the hostile uploads, and one stored nodeid of them."""

    project: ProjectFixture
    nodeid: str
    file: str
    change_id: int  # a lasting step in a hostile test, at a hostile commit


@pytest.fixture(scope="module")
def hostile(live_server: LiveServer, engine: Engine) -> Hostile:
    """Two runs of the hostile report, one per value of the hostile label (a CI matrix)."""
    project = make_project(engine, public=True)
    for index, value in enumerate(LABEL_VALUES):
        response = upload(
            live_server,
            project.upload_token,
            [("hostile.xml", junit_report(index / 10))],
            job=JOB,
            branch=BRANCH,
            commit="c0ffee",
            pipeline=f"pipe{SCRIPT}{index}",
            machine=f"m{TEXT}",
            label=[f"{LABEL_KEY}={value}"],
        )
        assert response.status_code == 202, response.text
        done = wait_done(live_server, project.upload_token, response.json()["id"])
        assert done["status"] == "done", done
    tests = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/rollups",
        params={"by": "test", "days": 3650},
    ).json()["rows"]
    nodeid = next(r["key"] for r in tests if PARAMS[1] in r["key"])
    files = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/rollups", params={"by": "file"}
    ).json()["rows"]
    # A history of the hostile branch (its only one: the watched one) whose tests step up
    # at run STEP_AT, at commits that carry payloads too.
    upload_all(
        live_server,
        project.upload_token,
        [
            (
                "hostile.xml",
                junit_report((2.0 if i >= STEP_AT else 0.0) + (i % 3) / 100),
                {
                    "job": JOB,
                    "branch": BRANCH,
                    "commit": f"c{i}{SCRIPT}{ATTR}",
                    "pipeline": f"step{SCRIPT}{i}",
                    "label": [f"{LABEL_KEY}={LABEL_VALUES[0]}"],
                },
            )
            for i in range(RUNS)
        ],
    )
    changes = httpx.get(f"{live_server.url}/api/v1/projects/{project.slug}/changes").json()
    assert changes["changes"], changes
    change_id = int(changes["changes"][0]["id"])
    return Hostile(project=project, nodeid=nodeid, file=files[0]["key"], change_id=change_id)


def pages(h: Hostile) -> list[str]:
    """Every page of the dashboard, reached with hostile data and hostile query strings."""
    base = f"/p/{h.project.slug}"
    label_filter = urlencode({"label": f"{LABEL_KEY}={LABEL_VALUES[0]}"})
    return [
        "/projects",
        base,
        f"{base}?{label_filter}",
        f"{base}/time",
        f"{base}/time?{label_filter}",
        f"{base}/files/{quote(h.file)}",
        f"{base}/test?{urlencode({'nodeid': h.nodeid})}",
        f"{base}/recommendations",
        f"{base}/recommendations?{urlencode({'jobs': TEXT, 'cell': SCRIPT})}",
        f"{base}/reductions",
        f"{base}/flaky",
        f"{base}/changes",
        f"{base}/changes/{h.change_id}",
        f"{base}/changes?{urlencode({'kind': TEXT, 'min_delta_s': SCRIPT})}",  # an error page
        f"{base}/test?{urlencode({'nodeid': TEXT + SCRIPT})}",  # a 404 page echoing it
        f"/signin?{urlencode({'next': '/' + ATTR, 'reason': TEXT + SCRIPT})}",
    ]


# Everything a payload could have left behind, seen from inside the page.
TRACES = """() => {
  const xlink = "http://www.w3.org/1999/xlink";
  const hrefs = [...document.querySelectorAll("*")].map(
    (el) => el.getAttribute("href") || el.getAttributeNS(xlink, "href") || "");
  return {
    pwn: document.querySelectorAll(".pwn").length,
    pwned: document.documentElement.outerHTML.includes("PWNED" + document.domain)
      || document.body.firstChild?.textContent?.startsWith?.("PWNED") === true,
    javascriptLinks: hrefs.filter((h) => h.trim().toLowerCase().startsWith("javascript")).length,
    boldInFigures: document.querySelectorAll(".js-plotly-plot b, .js-plotly-plot a").length,
  };
}"""


@pytest.fixture
def visitor(browser: object, live_server: LiveServer) -> Iterator[tuple[Watched, list[str]]]:
    """A fresh browser page that records problems and every dialog."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    watched = watch(context, live_server.url)
    dialogs: list[str] = []

    def on_dialog(dialog: object) -> None:
        dialogs.append(dialog.message)  # type: ignore[attr-defined]
        dialog.dismiss()  # type: ignore[attr-defined]

    watched.page.on("dialog", on_dialog)  # type: ignore[attr-defined]
    yield watched, dialogs
    context.close()


def test_no_report_string_runs_on_any_page(
    visitor: tuple[Watched, list[str]], hostile: Hostile, live_server: LiveServer
) -> None:
    watched, dialogs = visitor
    page = watched.page
    for path in pages(hostile):
        page.goto(live_server.url + path)  # type: ignore[attr-defined]
        page.wait_for_load_state("load")  # type: ignore[attr-defined]
        if page.locator("script.figure-data").count():  # type: ignore[attr-defined]
            page.wait_for_selector(".js-plotly-plot .main-svg")  # type: ignore[attr-defined]
        traces = page.evaluate(TRACES)  # type: ignore[attr-defined]
        assert traces == {
            "pwn": 0,
            "pwned": False,
            "javascriptLinks": 0,
            "boldInFigures": 0,
        }, path
        assert dialogs == [], path
    # 404 pages (the unknown nodeid) and 422 (the changes page asked a hostile kind) are
    # expected; nothing else may go wrong.
    problems = [
        p
        for p in watched.problems
        if not any(f"{w} 4{c}" in p for w in ("HTTP", "status of") for c in ("04", "22"))
    ]
    assert problems == []


def test_hostile_strings_show_literally_in_html_and_charts(
    visitor: tuple[Watched, list[str]], hostile: Hostile, live_server: LiveServer
) -> None:
    page = visitor[0].page
    base = f"{live_server.url}/p/{hostile.project.slug}"
    page.goto(base)  # type: ignore[attr-defined]
    body = page.locator("body").inner_text()  # type: ignore[attr-defined]
    assert JOB in body  # the jobs table, as text
    page.wait_for_selector("#fig-jobs .main-svg")  # type: ignore[attr-defined]
    ticks = page.locator("#fig-jobs .ytick text").all_text_contents()  # type: ignore[attr-defined]
    assert short_name(JOB) in ticks  # the chart's axis, as text (cut short, whole in hover)
    page.goto(f"{base}/time")  # type: ignore[attr-defined]
    page.wait_for_selector("#fig-label-0 .main-svg")  # type: ignore[attr-defined]
    title = page.locator("#fig-label-0 .gtitle").text_content()  # type: ignore[attr-defined]
    assert title == f"Share by {LABEL_KEY}"
    values = page.locator("#fig-label-0 .ytick text").all_text_contents()  # type: ignore[attr-defined]
    assert sorted(values) == sorted(short_name(v, limit=NARROW_TICK_CHARS) for v in LABEL_VALUES)
    # The hover box of a label value shows the markup as text, not as a link.
    first_bar = "[{curveNumber: 0, pointNumber: 0}]"
    page.evaluate(f'Plotly.Fx.hover(document.getElementById("fig-label-0"), {first_bar})')  # type: ignore[attr-defined]
    page.wait_for_selector("#fig-label-0 .hoverlayer .hovertext")  # type: ignore[attr-defined]
    hover = page.locator("#fig-label-0 .hoverlayer").text_content()  # type: ignore[attr-defined]
    assert any(value in hover for value in LABEL_VALUES)
    menu = page.locator('select[name="label"] option').all_text_contents()  # type: ignore[attr-defined]
    assert f"{LABEL_KEY}={LABEL_VALUES[0]}" in menu
    page.goto(f"{base}/test?{urlencode({'nodeid': hostile.nodeid})}")  # type: ignore[attr-defined]
    assert MESSAGE in page.locator("table#flaky").inner_text()  # type: ignore[attr-defined]
    assert hostile.nodeid in page.locator("h1.nodeid").inner_text()  # type: ignore[attr-defined]


def test_a_hostile_change_shows_literally(
    visitor: tuple[Watched, list[str]], hostile: Hostile, live_server: LiveServer
) -> None:
    page = visitor[0].page
    page.goto(f"{live_server.url}/p/{hostile.project.slug}/changes/{hostile.change_id}")  # type: ignore[attr-defined]
    page.wait_for_selector("#fig-step .main-svg")  # type: ignore[attr-defined]
    row = page.locator(f"#change-{hostile.change_id}")  # type: ignore[attr-defined]
    assert row.locator("[data-commit-after]").get_attribute("data-commit-after") == (
        f"c{STEP_AT}{SCRIPT}{ATTR}"
    )
    assert f"job{ATTR}" in row.inner_text()  # shown as text (a long name is cut short)
    # The figure's hover shows the commit as text.
    page.evaluate(  # type: ignore[attr-defined]
        'Plotly.Fx.hover(document.getElementById("fig-step"), [{curveNumber: 1, pointNumber: 0}])'
    )
    page.wait_for_selector("#fig-step .hoverlayer .hovertext")  # type: ignore[attr-defined]
    hover = page.locator("#fig-step .hoverlayer").text_content()  # type: ignore[attr-defined]
    assert f"c{STEP_AT}{SCRIPT}"[:12] in hover
