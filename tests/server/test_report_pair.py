"""A JUnit report and the `--durations` output of the same pytest run are one run, offline
and online.

`laptime analyze run.xml run.txt` counted each test twice (two runs) while the server merged
the pair; the pair's upload warned "durations output has no outcomes" although the JUnit gave
them, and the time page said "partial data: 1 of 1 runs" although the JUnit held every test.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import lxml.html  # type: ignore[import-untyped]
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from app.cli.main import cli
from tests.conftest import LiveServer, make_project
from tests.server.test_upload_flow import upload, wait_done

# name -> (setup, call, teardown) seconds; the last two are under --durations' threshold.
TESTS = {
    "tests/test_a.py::test_one": (0.5, 3.0, 0.25),
    "tests/test_a.py::test_two": (0.0, 1.5, 0.0),
    "tests/test_b.py::test_three": (0.25, 2.0, 0.0),
    "tests/test_b.py::test_fast": (0.0, 0.001, 0.0),
    "tests/test_b.py::test_faster": (0.0, 0.002, 0.0),
}
THRESHOLD_S = 0.005


def junit() -> str:
    cases = []
    for nodeid, phases in TESTS.items():
        path, name = nodeid.split("::")
        classname = path.removesuffix(".py").replace("/", ".")
        failure = "<failure message='no'>no</failure>" if name == "test_two" else ""
        cases.append(
            f'<testcase classname="{classname}" name="{name}" time="{sum(phases):.3f}">'
            f"{failure}</testcase>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" '
        f'tests="{len(cases)}" time="9.0">' + "".join(cases) + "</testsuite></testsuites>"
    )


def durations() -> str:
    rows, hidden = [], 0
    for nodeid, phases in TESTS.items():
        for phase, seconds in zip(("setup", "call", "teardown"), phases, strict=True):
            if seconds >= THRESHOLD_S:
                rows.append((seconds, f"{seconds:.2f}s {phase:<8} {nodeid}"))
            else:
                hidden += 1
    lines = [line for _, line in sorted(rows, reverse=True)]
    return (
        "============================= slowest durations ==============================\n"
        + "\n".join(lines)
        + f"\n\n({hidden} durations < {THRESHOLD_S}s hidden.  Use -vv to show these durations.)\n"
        "========================= 1 failed, 4 passed in 9.00s =========================\n"
    )


@pytest.fixture
def pair(tmp_path: Path) -> list[Path]:
    xml, txt = tmp_path / "run.xml", tmp_path / "run.txt"
    xml.write_text(junit())
    txt.write_text(durations())
    return [xml, txt]


def _offline(paths: list[Path], by: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(cli, ["analyze", *map(str, paths), "--by", by, "--json"])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, object]] = json.loads(result.output)
    return rows


FIELDS = ("key", "runs", "total_s", "failures", "tests")


@pytest.mark.parametrize("order", ["xml-first", "txt-first"])
def test_offline_and_online_count_the_pair_as_one_run(
    live_server: LiveServer, engine: Engine, pair: list[Path], order: str
) -> None:
    paths = pair if order == "xml-first" else pair[::-1]
    project = make_project(engine)
    response = upload(live_server, project.upload_token, [(p.name, p.read_bytes()) for p in paths])
    assert response.status_code == 202, response.text
    doc = wait_done(live_server, project.upload_token, response.json()["id"])
    assert doc["status"] == "done", doc
    # The JUnit gives the outcomes: no warning says they are missing.
    assert not [w for w in doc["warnings"] if "no outcomes" in str(w)], doc["warnings"]
    for by in ("file", "test"):
        online = httpx.get(
            f"{live_server.url}/api/v1/projects/{project.slug}/rollups",
            params={"by": by, "days": "3650"},
            headers={"Authorization": f"Bearer {project.read_token}"},
        ).json()
        offline = _offline(paths, by)
        pick = lambda rows: sorted(  # noqa: E731
            tuple(round(r[f], 6) if isinstance(r[f], float) else r[f] for f in FIELDS) for r in rows
        )
        assert pick(offline) == pick(online["rows"])
    # Each test once, with all its phases: the JUnit's times, not twice.
    assert sum(r["runs"] for r in _offline(paths, "test")) == len(TESTS)  # type: ignore[misc]
    total = sum(sum(p) for p in TESTS.values())
    assert sum(r["total_s"] for r in _offline(paths, "file")) == pytest.approx(total)  # type: ignore[misc]
    assert online["completeness"]["complete"] is True, online["completeness"]


def test_the_cli_and_the_time_page_agree_the_pair_is_complete(
    live_server: LiveServer, engine: Engine, pair: list[Path]
) -> None:
    result = CliRunner().invoke(cli, ["analyze", *map(str, pair)])
    assert result.exit_code == 0, result.output
    assert "complete: 5 results" in result.output, result.output
    project = make_project(engine, public=True)
    response = upload(live_server, project.upload_token, [(p.name, p.read_bytes()) for p in pair])
    doc = wait_done(live_server, project.upload_token, response.json()["id"])
    assert doc["status"] == "done", doc
    page = httpx.get(f"{live_server.url}/p/{project.slug}/time?days=3650", timeout=60)
    assert page.status_code == 200
    text = lxml.html.fromstring(page.text).text_content()
    assert "partial data" not in text
    assert "1 of 1 runs" not in text


def test_two_runs_of_one_format_stay_two_runs_offline(tmp_path: Path) -> None:
    """Repeated runs of a job (`--history`) are not a pair: each JUnit file is its run."""
    first, second = tmp_path / "a.xml", tmp_path / "b.xml"
    first.write_text(junit())
    second.write_text(junit())
    rows = _offline([first, second], "test")
    assert sum(r["runs"] for r in rows) == 2 * len(TESTS)  # type: ignore[misc]


def test_reduce_matrix_labels_a_pair_as_one_run(tmp_path: Path, pair: list[Path]) -> None:
    """Labels are per run: a pair of files is one labelled run, not two frames' rows apart."""
    mac = tmp_path / "mac.xml"
    mac.write_text(junit())
    args = [f"{pair[0]}@os=linux", f"{pair[1]}@os=linux", f"{mac}@os=mac", "--json"]
    result = CliRunner().invoke(cli, ["reduce", "matrix", *args])
    assert result.exit_code == 0, result.output
    assert "verdicts" in json.loads(result.output)
