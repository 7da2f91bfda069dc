"""A parametrized function whose cases each slow a little (each below its own noise) is found
as one function change at ingest; a flat history stays silent."""

from __future__ import annotations

import random

import httpx

from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.pages.conftest import sign_in_form
from tests.uploads import upload_all

RUNS = 40
STEP_AT = 22
CASES = 24


def _report(i: int, rng: random.Random, step: float) -> bytes:
    """Run i: test_grid[0..CASES-1], each x(1+step) from STEP_AT, with +-10% noise per case."""
    factor = 1.0 + (step if i >= STEP_AT else 0.0)
    cases = "".join(
        f'<testcase classname="tests.test_p" name="test_grid[{k}]" '
        f'time="{0.5 * factor * rng.uniform(0.9, 1.1):.6f}"/>'
        for k in range(CASES)
    )
    return (
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        f"{cases}</testsuite></testsuites>"
    ).encode()


def _changes(server: LiveServer, project: ProjectFixture, step: float) -> list[dict[str, object]]:
    rng = random.Random(11)
    uploads = [
        (
            "r.xml",
            _report(i, rng, step),
            {"job": "unit", "branch": "main", "commit": f"{i:040x}", "pipeline": f"m-{i}"},
        )
        for i in range(RUNS)
    ]
    upload_all(server, project.upload_token, uploads)
    answer = httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/changes",
        headers={"Authorization": f"Bearer {project.read_token}"},
    )
    assert answer.status_code == 200, answer.text
    changes: list[dict[str, object]] = answer.json()["changes"]
    return changes


def test_cases_that_each_slow_a_little_are_one_function_change(
    live_server: LiveServer, engine: object
) -> None:
    project = make_project(engine)  # type: ignore[arg-type]
    found = _changes(live_server, project, step=0.06)
    # The function (and its file, which holds only it) stepped; no single case is flagged:
    # each stepped 6% against its own +-10% noise.
    named = sorted((c["kind"], c["name"]) for c in found)
    assert named == [("file", "tests/test_p.py"), ("function", "tests/test_p.py::test_grid")]
    (change,) = [c for c in found if c["kind"] == "function"]
    assert change["commit_after"] == f"{STEP_AT:040x}"
    only = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/changes",
        params={"kind": "function"},
        headers={"Authorization": f"Bearer {project.read_token}"},
    ).json()["changes"]
    assert [c["id"] for c in only] == [change["id"]]
    with httpx.Client(base_url=live_server.url, timeout=60) as client:
        fields = sign_in_form(client)
        client.post("/signin", data={**fields, "token": project.read_token})
        page = client.get(f"/p/{project.slug}/changes", params={"kind": "function"})
    assert page.status_code == 200
    row = page.text[page.text.index("<tbody") :]
    assert "tests/test_p.py::test_grid" in row
    assert "(its cases together)" in row
    assert "job wall" not in row


def test_a_flat_history_stays_silent(live_server: LiveServer, engine: object) -> None:
    project = make_project(engine)  # type: ignore[arg-type]
    assert _changes(live_server, project, step=0.0) == []
