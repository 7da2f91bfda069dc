"""The recommendation answers on a rich history, byte for byte: parametrized tests, two matrix
cells on the same commits, machine types and a declared catalogue (so every answer is priced),
a pinned shard assignment, an upload's status; and `laptime reduce --json`. The thin history
of test_golden_answers leaves these answers nearly empty; this one fills every field."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from app.cli.main import cli
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.server.test_golden_answers import _request, check, normalise
from tests.uploads import upload_all

# Per test: seconds on python 3.10; on 3.11 the same (`test_r` fails there: a cell that matters).
SECONDS = {
    "tests/test_p.py::test_p[1-a]": 30.0,
    "tests/test_p.py::test_p[1-b]": 32.0,
    "tests/test_p.py::test_p[2-a]": 28.0,
    "tests/test_p.py::test_p[2-b]": 31.0,
    "tests/test_p.py::test_p[3-a]": 29.0,
    "tests/test_p.py::test_p[3-b]": 33.0,
    "tests/test_q.py::test_q": 60.0,
    "tests/test_r.py::test_r": 20.0,
    "tests/test_s.py::test_s": 45.0,
}
COLLECTED = [*SECONDS, "tests/test_new.py::test_new"]


def junit(failing: set[str]) -> bytes:
    """One pytest-style report of SECONDS, `failing` nodeids failed."""
    cases = []
    for nodeid, seconds in SECONDS.items():
        path, name = nodeid.split("::")
        classname = path.removesuffix(".py").replace("/", ".")
        failure = '<failure message="no">no</failure>' if nodeid in failing else ""
        cases.append(f'<testcase classname="{classname}" name="{name}" time="{seconds}">{failure}')
        cases[-1] += "</testcase>"
    suite = f'<testsuite name="pytest">{"".join(cases)}</testsuite>'
    return f'<?xml version="1.0"?><testsuites>{suite}</testsuites>'.encode()


@dataclass(frozen=True)
class Rich:
    project: ProjectFixture
    upload_id: int


@pytest.fixture(scope="module")
def rich(live_server: LiveServer, engine: Engine) -> Rich:
    """Two commits x two pythons on a known machine type, the project priced by github."""
    project = make_project(engine)
    uploads = []
    for commit in ("c1", "c2"):
        for python in ("3.10", "3.11"):
            failing = {"tests/test_r.py::test_r"} if python == "3.11" else set()
            fields: dict[str, Any] = {
                "job": "unit",
                "commit": commit,
                "pipeline": f"{commit}-pipe",
                "machine": "ubuntu-latest",
                "label": [f"python={python}"],
                "wall_s": 400.0,
                "peak_rss_mib": 3000.0,
            }
            uploads.append((f"{commit}-{python}.xml", junit(failing), fields))
    # One at a time: run ids (and so first-seen orders) follow the upload order.
    for one in uploads:
        upload_all(live_server, project.upload_token, [one])
    answer = httpx.put(
        f"{live_server.url}/api/v1/projects/{project.slug}/catalogue",
        json={"name": "github"},
        headers={"Authorization": f"Bearer {project.admin_token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    listed = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/uploads",
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    )
    return Rich(project, min(u["id"] for u in listed.json()["uploads"]))


# (file name, method, path under the project, query, JSON body). Not the parametrize answer:
# its values keep the first-seen order of result rows read without an ORDER BY, which varies
# with where Postgres placed them; `laptime reduce parametrize --json` below pins its shape.
ANSWERS: list[tuple[str, str, str, dict[str, Any], Any]] = [
    ("split-get.json", "GET", "recommendations/split", {"jobs": "2-3"}, None),
    ("split-cell.json", "GET", "recommendations/split", {"cell": "python=3.10"}, None),
    ("split-post.json", "POST", "recommendations/split", {"jobs": "2-3"}, None),
    ("split-test.json", "GET", "recommendations/split", {"granularity": "test"}, None),
    ("machines.json", "GET", "recommendations/machines", {}, None),
    ("machines-split.json", "GET", "recommendations/machines", {"split_jobs": "2-3"}, None),
    ("matrix.json", "GET", "recommendations/matrix", {}, None),
    ("matrix-marker.json", "GET", "recommendations/matrix", {"by": "marker"}, None),
    ("shards-get.json", "GET", "shards", {"total": 3}, None),
    ("shards-post.json", "POST", "shards", {"total": 2}, COLLECTED),
    ("shards-pin-1.json", "POST", "shards", {"total": 2, "pipeline": "pin"}, COLLECTED),
    ("shards-pin-2.json", "POST", "shards", {"total": 2, "pipeline": "pin", "index": 2}, COLLECTED),
    ("catalogue.json", "GET", "catalogue", {}, None),
]


@pytest.mark.parametrize(("name", "method", "path", "params", "body"), ANSWERS)
def test_recommendation_answer_bytes(
    live_server: LiveServer,
    rich: Rich,
    name: str,
    method: str,
    path: str,
    params: dict[str, Any],
    body: Any,
) -> None:
    project = rich.project
    token = project.admin_token if path == "catalogue" else project.read_token
    path = f"/api/v1/projects/{project.slug}/{path}"
    response = _request(live_server, token, method, path, body, **params)
    recorded = f"{response.status_code}\n".encode()
    recorded += normalise(response.content, {project.slug: "<slug>"})
    check(f"api-rich/{name}", _plan_ids(recorded))


def _plan_ids(body: bytes) -> bytes:
    """Stored plan ids are made per request: a placeholder like the others."""
    import re

    return re.sub(rb'"plan_id":"[0-9a-f]+"', b'"plan_id":"<plan>"', body)


def test_upload_status_bytes(live_server: LiveServer, rich: Rich) -> None:
    response = httpx.get(
        f"{live_server.url}/api/v1/uploads/{rich.upload_id}",
        headers={"Authorization": f"Bearer {rich.project.read_token}"},
        timeout=60,
    )
    volatile = {rich.project.slug: "<slug>", f'"project_id":{rich.project.id}': '"project_id":0'}
    body = normalise(response.content, volatile)
    # Attempts depend on the machine, not the code: on a loaded one a claim can outlive its
    # lease and be taken over (a second attempt), which is the worker doing its job.
    body = re.sub(rb'"attempts":[0-9]+', b'"attempts":"<n>"', body)
    # ... and an attempt rolled back spends a run id, so the run's id is not the upload's.
    body = re.sub(rb'"run_id":"<id[0-9]+>"', b'"run_id":"<run id>"', body)
    recorded = f"{response.status_code}\n".encode() + body
    check("api-rich/upload.json", recorded)


def _durations(python: str) -> str:
    lines = [
        f"{s + (5.0 if python == '3.11' and 'test_q' in n else 0.0):.2f}s call     {n}"
        for n, s in SECONDS.items()
    ]
    return "\n".join(["=== slowest durations ===", *lines, "=== 9 passed in 300.00s ===", ""])


CLI_CALLS: list[tuple[str, list[str]]] = [
    ("reduce-parametrize.json", ["reduce", "parametrize", "{a}", "--json"]),
    ("reduce-parametrize-1.json", ["reduce", "parametrize", "{a}", "--strength", "1", "--json"]),
    (
        "reduce-matrix.json",
        ["reduce", "matrix", "{a}@python=3.10,commit=c1", "{b}@python=3.11,commit=c1", "--json"],
    ),
    ("shard-3.json", ["shard", "--total", "3", "--index", "2", "{a}", "--json"]),
    ("plan-test.json", ["plan", "{a}", "--granularity", "test", "--jobs", "2-4", "--json"]),
]


@pytest.mark.parametrize(("name", "args"), CLI_CALLS)
def test_cli_json_bytes(tmp_path: Path, name: str, args: list[str]) -> None:
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text(_durations("3.10"))
    b.write_text(_durations("3.11"))
    result = CliRunner().invoke(cli, [x.format(a=a, b=b) for x in args])
    output = result.output.replace(str(tmp_path), "<tmp>").encode()
    check(f"cli-rich/{name}", f"{result.exit_code}\n".encode() + output)
