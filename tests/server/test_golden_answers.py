"""The JSON contracts, byte for byte: every GET/POST answer of the API on one fixed history, and
the CLI's `--json` outputs on fixed reports, compared with the bytes stored under
tests/data/golden/ (captured before the answers became typed objects end to end, issue 28).

What differs between runs by construction (the project's slug, plan ids, database ids, the
clock) is replaced by a stable placeholder in the raw bytes; everything else must be equal.
Set LAPTIME_GOLDEN_WRITE=1 to capture the files again (then review the diff)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from app.cli.main import cli
from tests.conftest import LiveServer
from tests.server.test_plan_accuracy import Executed, executed  # noqa: F401 (the fixture)

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
WRITE = os.environ.get("LAPTIME_GOLDEN_WRITE") == "1"

# ISO datetimes and dates as the answers write them.
_TIME = re.compile(rb'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"')
_DATE = re.compile(rb'"\d{4}-\d\d-\d\d"')
# Database ids: numbered by the sequence, which other tests of the session advance.
_IDS = re.compile(rb'"(id|run_id|upload_id|token_id)":(\d+)')
_HEX_ID = re.compile(rb"\b[0-9a-f]{32}\b")


def normalise(body: bytes, volatile: dict[str, str]) -> bytes:
    """The answer with run-dependent values replaced by placeholders, ordinal per value."""
    for value, name in volatile.items():
        body = body.replace(value.encode(), name.encode())
    body = _TIME.sub(b'"<time>"', body)
    body = _DATE.sub(b'"<date>"', body)
    seen: dict[bytes, int] = {}

    def ordinal(match: re.Match[bytes]) -> bytes:
        number = seen.setdefault(match.group(2), len(seen) + 1)
        return b'"' + match.group(1) + b'":"<id' + str(number).encode() + b'>"'

    body = _IDS.sub(ordinal, body)
    hexes: dict[bytes, int] = {}
    return _HEX_ID.sub(
        lambda m: b"<hex" + str(hexes.setdefault(m.group(0), len(hexes) + 1)).encode() + b">", body
    )


def check(name: str, body: bytes) -> None:
    """Equal to the stored bytes (or stored, when capturing)."""
    path = GOLDEN / name
    if WRITE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    assert path.exists(), f"no golden file {path}: capture with LAPTIME_GOLDEN_WRITE=1"
    assert body == path.read_bytes(), name


def _request(
    server: LiveServer, token: str, method: str, path: str, body: Any = None, **params: Any
) -> httpx.Response:
    return httpx.request(
        method,
        f"{server.url}{path}",
        params=params,
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=120,
    )


COLLECTED = [f"tests/test_{n}.py::test_one" for n in "abcd"]

# (file name, method, path under the project, query, JSON body)
ANSWERS: list[tuple[str, str, str, dict[str, Any], Any]] = [
    ("rollups.json", "GET", "rollups", {}, None),
    ("rollups-file.json", "GET", "rollups", {"group_by": "file"}, None),
    ("pipelines.json", "GET", "pipelines", {}, None),
    ("jobs.json", "GET", "jobs", {}, None),
    ("trend.json", "GET", "trend", {}, None),
    ("uploads.json", "GET", "uploads", {}, None),
    ("split-get.json", "GET", "recommendations/split", {"jobs": "2-3"}, None),
    ("split-post.json", "POST", "recommendations/split", {"jobs": "2-3"}, None),
    ("shards-get.json", "GET", "shards", {"total": 2}, None),
    ("shards-get-index.json", "GET", "shards", {"total": 2, "index": 1}, None),
    ("shards-post.json", "POST", "shards", {"total": 2}, COLLECTED),
    ("machines.json", "GET", "recommendations/machines", {}, None),
    ("parametrize.json", "GET", "recommendations/parametrize", {}, None),
    ("matrix.json", "GET", "recommendations/matrix", {}, None),
    ("catalogue.json", "GET", "catalogue", {}, None),
    ("accuracy.json", "GET", "recommendations/accuracy", {}, None),
]


@pytest.mark.parametrize(("name", "method", "path", "params", "body"), ANSWERS)
def test_api_answer_bytes(
    live_server: LiveServer,
    executed: Executed,  # noqa: F811
    name: str,
    method: str,
    path: str,
    params: dict[str, Any],
    body: Any,
) -> None:
    project = executed.project
    token = project.admin_token if path == "catalogue" else project.read_token
    response = _request(
        live_server, token, method, f"/api/v1/projects/{project.slug}/{path}", body, **params
    )
    volatile = {project.slug: "<slug>", executed.plan_id: "<plan>"}
    recorded = f"{response.status_code}\n".encode() + normalise(response.content, volatile)
    check(f"api/{name}", recorded)


REPORT = """\
============================= slowest durations ==============================
300.00s call     a.py::t1
300.00s call     a.py::t2
400.00s call     b.py::t
200.00s call     c.py::t
============================== 4 passed in 1200.00s ===========================
"""

CLI_CALLS: list[tuple[str, list[str]]] = [
    ("analyze.json", ["analyze", "{report}", "--json"]),
    ("plan.json", ["plan", "{report}", "--jobs", "2-3", "--overhead", "100s", "--json"]),
    ("plan-marker.json", ["plan", "{report}", "--granularity", "marker", "--json"]),
    ("shard.json", ["shard", "--total", "2", "--index", "1", "{report}", "--json"]),
    ("size.json", ["size", "{report}", "--catalogue", "github", "--json"]),
]


@pytest.mark.parametrize(("name", "args"), CLI_CALLS)
def test_cli_json_bytes(tmp_path: Path, name: str, args: list[str]) -> None:
    report = tmp_path / "job.txt"
    report.write_text(REPORT)
    result = CliRunner().invoke(cli, [a.format(report=report) for a in args])
    output = result.output.replace(str(tmp_path), "<tmp>").encode()
    check(f"cli/{name}", f"{result.exit_code}\n".encode() + output)
