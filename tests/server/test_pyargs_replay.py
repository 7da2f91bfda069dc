"""A history taken with `pytest --pyargs` (an installed package) is replayed that way by the
server's split plan (plans that run): the run stores the directory its nodeids are
relative to, and each job's pytest arguments name modules under `--pyargs`, never paths that
do not exist where the job runs."""

from __future__ import annotations

import json
from typing import Any

import httpx

from tests.conftest import LiveServer, ProjectFixture
from tests.server.test_upload_flow import upload, wait_done

SITE = "/opt/venv/lib/python3.11/site-packages/pkgx"


def pyargs_report(run: int) -> bytes:
    tests = [
        {
            "nodeid": f"tests/test_m{i}.py::test_{j}",
            "outcome": "passed",
            "duration_s": 4.0 + i + 0.01 * run,
        }
        for i in range(4)
        for j in range(3)
    ]
    session = {"wall_s": 80.0, "invocation": "pyargs", "rootdir": SITE}
    doc = {"format": "laptime-json", "version": 1, "session": session, "tests": tests}
    return json.dumps(doc).encode()


def test_split_plan_replays_a_pyargs_history(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    for run in range(2):
        answer = upload(
            live_server, project.upload_token, [("r.json", pyargs_report(run))], commit=f"c{run}"
        )
        assert answer.status_code == 202, answer.text
        assert wait_done(live_server, project.upload_token, answer.json()["id"])["status"] == "done"
    plan: dict[str, Any] = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/recommendations/split",
        params={"jobs": "2", "overhead": "1s", "granularity": "file"},
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    ).json()
    assert plan["verdict"] == "split", plan
    selected = []
    for job in plan["jobs"]:
        args = job["pytest_args"]
        assert "--pyargs" in args, args
        assert not any(a.startswith("tests/") for a in args), args
        selected += [a for a in args if a.startswith("pkgx.tests.")]
    assert sorted(selected) == [f"pkgx.tests.test_m{i}" for i in range(4)]
