"""No page, API answer or CLI output shows `nan`, `None`, `undefined` or `inf` for a project
with sparse data: jobs without a machine, tests without markers, zero and unknown durations,
a parametrize explosion whose variants all took 0 s."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from click.testing import CliRunner

from app.cli.main import cli
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.pages.conftest import Watched, watch
from tests.uploads import upload_all

DUMP = os.environ.get("LAPTIME_TEST_DUMP")  # a folder to keep each page's text, for a look
# Whole words only: a test may be called test_info.
WRONG = re.compile(r"(?<![\w.])(nan|NaN|None|undefined|inf|-inf|Infinity|null)(?![\w.])")


def junit(cases: list[tuple[str, str, str | None]]) -> bytes:
    """(classname, name, time attribute or None) -> a JUnit report with unknown markers."""
    body = "".join(
        f'<testcase classname="{c}" name="{n}"' + (f' time="{t}"' if t is not None else "") + "/>"
        for c, n, t in cases
    )
    return f'<testsuite name="pytest">{body}</testsuite>'.encode()


def laptime_json(tests: list[dict[str, Any]]) -> bytes:
    for test in tests:
        file, _, name = test["nodeid"].partition("::")
        test.setdefault("file", file)
        test.setdefault("function", name.split("[")[0])
        test.setdefault("outcome", "passed")
        test.setdefault("markers", [])
    return json.dumps(
        {"format": "laptime-json", "version": 1, "session": {}, "tests": tests}
    ).encode()


def sparse_reports() -> dict[str, bytes]:
    """Reports named by job: no machine, no labels, no walls, no phases, no memory."""
    explosion = [
        {"nodeid": f"tests/test_grid.py::test_grid[{a}-{b}]", "params": f"{a}-{b}",
         "param_values": {"a": a, "b": b}, "duration_s": 0.0}
        for a in ("x", "y", "z") for b in ("p", "q")
    ]  # fmt: skip
    return {
        "unit": junit(
            [
                ("tests.test_core", "test_fast", "0"),
                ("tests.test_core", "test_timeless", None),
                ("tests.test_core", "test_slow", "3.5"),
            ]
        ),
        "plugin": laptime_json(
            [*explosion, {"nodeid": "tests/test_core.py::test_zero", "duration_s": 0.0}]
        ),
    }


@pytest.fixture(scope="module")
def sparse(live_server: LiveServer, engine: Any) -> ProjectFixture:
    project = make_project(engine, public=True)
    # One job on a catalogue machine (so machine sizing shows), the other on none.
    upload_all(
        live_server,
        project.upload_token,
        (
            (f"{job}.xml", body, {"job": job, **({"machine": "large"} if job == "unit" else {})})
            for job, body in sparse_reports().items()
        ),
    )
    return project


def pages(slug: str) -> list[str]:
    dims = ("file", "function", "test", "marker", "job", "machine", "branch")
    return [
        "/projects",
        f"/p/{slug}",
        *(f"/p/{slug}/time?by={dim}" for dim in dims),
        f"/p/{slug}/files/tests/test_core.py",
        f"/p/{slug}/files/tests/test_grid.py",
        f"/p/{slug}/test?nodeid=" + quote("tests/test_core.py::test_zero"),
        f"/p/{slug}/test?nodeid=" + quote("tests/test_core.py::test_timeless"),
        f"/p/{slug}/recommendations",
        f"/p/{slug}/recommendations?jobs=1-3",
        f"/p/{slug}/reductions",
        f"/p/{slug}/reductions?show=all",
    ]


@pytest.fixture(scope="module")
def watched(browser: object, live_server: LiveServer) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    yield watch(context, live_server.url)
    context.close()


@pytest.mark.browser
def test_no_page_shows_nan_none_or_undefined(
    watched: Watched, live_server: LiveServer, sparse: ProjectFixture
) -> None:
    page = watched.page
    for path in pages(sparse.slug):
        response = page.goto(live_server.url + path)  # type: ignore[attr-defined]
        assert response.status == 200, path
        if page.locator(".js-plotly-plot").count():  # type: ignore[attr-defined]
            page.wait_for_selector(".js-plotly-plot .main-svg")  # type: ignore[attr-defined]
        text = page.inner_text("body")  # type: ignore[attr-defined]
        if DUMP:
            Path(DUMP, quote(path, safe="") + ".txt").write_text(text)
        found = sorted({m.group(0) for m in WRONG.finditer(text)})
        assert not found, (path, found, [line for line in text.splitlines() if WRONG.search(line)])
    assert watched.problems == []


API_PATHS = (
    *(f"rollups?by={d}" for d in ("file", "function", "test", "marker", "job", "machine")),
    "rollups?by=file&format=csv",
    "pipelines",
    "jobs",
    "trend",
    "uploads",
    "recommendations/split?jobs=2",
    "recommendations/parametrize",
    "recommendations/matrix",
    "recommendations/machines",
)


def refuse_constant(name: str) -> None:
    pytest.fail(f"{name} is not JSON")


def test_api_answers_are_strict_json_without_nan(
    live_server: LiveServer, sparse: ProjectFixture
) -> None:
    for path in API_PATHS:
        response = httpx.get(
            f"{live_server.url}/api/v1/projects/{sparse.slug}/{path}",
            headers={"Authorization": f"Bearer {sparse.read_token}"},
            timeout=60,
        )
        assert response.status_code in (200, 422), (path, response.text)
        assert not re.search(r"\b(NaN|Infinity|nan|inf)\b", response.text), (path, response.text)
        if "csv" not in path:
            json.loads(response.text, parse_constant=refuse_constant)


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "{unit}", "{plugin}"],
        ["analyze", "{unit}", "{plugin}", "--by", "marker"],
        ["analyze", "{unit}", "{plugin}", "--json"],
        ["reduce", "parametrize", "{plugin}"],
        ["reduce", "parametrize", "{plugin}", "--json"],
        ["plan", "{unit}", "{plugin}", "--jobs", "1-3"],
        ["size", "{unit}", "{plugin}"],
    ],
)
def test_cli_output_has_no_nan(tmp_path: Path, args: list[str]) -> None:
    paths = {}
    for job, body in sparse_reports().items():
        path = tmp_path / (f"{job}.xml" if job == "unit" else f"{job}.json")
        path.write_bytes(body)
        paths[job] = str(path)
    result = CliRunner().invoke(cli, [a.format(**paths) for a in args])
    assert result.exception is None or result.exit_code == 1, result.output
    words = {m.group(0) for m in WRONG.finditer(result.output)} - {"null"}
    assert not words, result.output
