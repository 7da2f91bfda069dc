"""Close the loop from a pasted GitHub Actions snippet, end to end on a live server: the
split recommendation's snippet gives each matrix job LAPTIME_LABELS, `laptime-ci upload` run
with exactly that job environment (as the job's upload step would be) sends the report, and the
accuracy endpoint matches each run to the plan and to its job."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import lxml.html  # type: ignore[import-untyped]
from sqlalchemy import Engine

from tests.conftest import LiveServer, make_project
from tests.snippets import github_matrix_envs
from tests.uploads import upload_all

# Four files, one test each, behind 30 s of job setup: two jobs nearly halve the wait.
HISTORY = {"a": 40.0, "b": 30.0, "c": 20.0, "d": 10.0}
ASK = {"jobs": "2", "granularity": "file"}
PIPELINE = "4242"
MEASURED_WALL = {1: 61.0, 2: 83.0}


def report(seconds: dict[str, float], wall_s: float) -> bytes:
    """A laptime JSON report as the plugin writes it: nodeid -> seconds, the session's wall."""
    tests = [{"nodeid": n, "outcome": "passed", "duration_s": s} for n, s in seconds.items()]
    doc = {"format": "laptime-json", "version": 1, "session": {"wall_s": wall_s}, "tests": tests}
    return json.dumps(doc).encode()


def nodeid(name: str) -> str:
    return f"tests/test_{name}.py::test_one"


def read(server: LiveServer, token: str, path: str, **params: Any) -> dict[str, Any]:
    answer = httpx.get(
        f"{server.url}{path}",
        params=params,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def track(server: LiveServer, token: str, path: str, **params: Any) -> dict[str, Any]:
    """POST the question: the plan is stored and its id handed out (a GET stores nothing)."""
    answer = httpx.post(
        f"{server.url}{path}",
        params=params,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_runs_uploaded_as_the_snippet_says_are_matched_to_the_plan_and_job(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine, public=True)
    history = report({nodeid(n): s for n, s in HISTORY.items()}, wall_s=130.0)
    upload_all(
        live_server,
        project.upload_token,
        [("h.json", history, {"pipeline": f"hist-{i}", "job": "test"}) for i in range(2)],
    )
    plan = track(
        live_server,
        project.read_token,
        f"/api/v1/projects/{project.slug}/recommendations/split",
        **ASK,
    )
    assert plan["verdict"] == "split", plan["reason"]
    plan_id = plan["plan_id"]
    assert plan_id
    snippet = plan["config"]["github_actions"]
    envs = github_matrix_envs(snippet)
    assert [e["LAPTIME_LABELS"] for e in envs] == [f"plan={plan_id},shard={i}/2" for i in (1, 2)]

    # Each job runs its members, then its upload step: the client with the job's environment
    # (GitHub's own variables plus the snippet's env), nothing passed on the command line.
    client = Path(sys.executable).parent / "laptime-ci"
    for index, (job, env) in enumerate(zip(plan["jobs"], envs, strict=True), start=1):
        members = {m.removeprefix("tests/test_").removesuffix(".py") for m in job["members"]}
        path = tmp_path / f"job{index}.json"
        path.write_bytes(report({nodeid(m): HISTORY[m] for m in members}, MEASURED_WALL[index]))
        github = {
            "GITHUB_ACTIONS": "true",
            "GITHUB_RUN_ID": PIPELINE,
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_JOB": "test",  # the same for every matrix job
            "GITHUB_SHA": "c0ffee",
        }
        done = subprocess.run(
            [str(client), "upload", str(path), "--wait", "--fail-on-error"],
            env={
                "PATH": os.environ["PATH"],
                "LAPTIME_URL": live_server.url,
                "LAPTIME_TOKEN": project.upload_token,
                **github,
                # The job's labels; its server settings are the repository's (set above).
                "LAPTIME_LABELS": env["LAPTIME_LABELS"],
            },
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    body = read(
        live_server,
        project.read_token,
        f"/api/v1/projects/{project.slug}/recommendations/accuracy",
        plan=plan_id,
    )
    [executed] = body["plans"]
    [pipeline] = executed["pipelines"]
    assert pipeline["pipeline"] == f"{PIPELINE}-1"
    assert pipeline["complete"] is True
    assert pipeline["unmatched_runs"] == 0
    by_index = {job["index"]: job for job in pipeline["jobs"]}
    for index, wall in MEASURED_WALL.items():
        assert by_index[index]["run_id"] is not None
        assert by_index[index]["wall_s"]["measured"] == wall
        predicted = plan["jobs"][index - 1]["predicted_wall_s"]
        assert by_index[index]["wall_s"]["predicted"] == predicted
    assert pipeline["wait_s"]["measured"] == max(MEASURED_WALL.values())

    # The shards are jobs of the cell they were planned for, not cells of their own: the next
    # plan reads the history and the shards' runs together.
    again = read(
        live_server,
        project.read_token,
        f"/api/v1/projects/{project.slug}/recommendations/split",
        **ASK,
    )
    assert again["cells"] == [""]

    # The recommendations page hands out the same snippet once "Track this plan" is posted
    # (its GET stores nothing, so it names no plan).
    with httpx.Client(base_url=live_server.url, timeout=60) as browser:
        page = browser.get(f"/p/{project.slug}/recommendations", params=ASK)
        assert page.status_code == 200
        doc = lxml.html.fromstring(page.text)
        assert "plan=" not in "".join(p.text_content() for p in doc.cssselect("pre"))
        [form] = doc.cssselect("form.track-plan")
        fields = {i.get("name"): i.get("value") for i in form.cssselect("input[type=hidden]")}
        tracked = browser.post(str(form.get("action")), data=fields)
        assert tracked.status_code == 200
        refused = browser.post(str(form.get("action")), data={"csrf": "forged"})
        assert refused.status_code == 403
    tracked_doc = lxml.html.fromstring(tracked.text)
    shown = "".join(p.text_content() for p in tracked_doc.cssselect("pre"))
    assert f"plan={plan_id},shard=1/2" in shown
    assert not tracked_doc.cssselect("form.track-plan")
