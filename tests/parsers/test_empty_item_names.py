"""Tests whose pytest item has an empty name are tests, not interrupted rows.

A conftest that collects data files as items named "" (Pygments collects its 1,508 example
files and snippets so) gives nodeids ending in "::". The plugin's JSON and pytest's own
`--durations` output carry them as pytest collected them; a reader that takes "ends in ::"
for "no test name" loses them, and a plan built on the rest sends them to no job's prediction.
Checked against pytest's own `--collect-only` listing of the same suite.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx
import pandas as pd
import pytest
from sqlalchemy import Engine

from app.cli.local_reports import load_local
from ingest.parsers import parse_report
from model.frames import named_results
from tests.conftest import LiveServer, make_project
from tests.server.test_upload_flow import upload, wait_done

REPO = Path(__file__).resolve().parents[2]
CONFTEST = """
import pytest


class CaseFile(pytest.File):
    def collect(self):
        # One item per file, named "" as Pygments' example-file collector does.
        yield CaseItem.from_parent(self, name="")


class CaseItem(pytest.Item):
    def runtest(self):
        assert self.path.read_text().strip() == "ok"


def pytest_collect_file(parent, file_path):
    if file_path.suffix == ".case" or file_path.parent.name == "cases":
        return CaseFile.from_parent(parent, path=file_path)
"""
MODULE = """
def test_one(): pass

def test_two(): pass
"""
CASES = ("a", "b", "deep/c", "example.py")


def _file(name: str) -> str:
    """A case's file name: data files, and one Python file the collector takes as data."""
    return name if name.endswith(".py") else f"{name}.case"


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(REPO / "client"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "laptime_ci.plugin"]
    return subprocess.run(
        [*command, *args], cwd=root, env=env, capture_output=True, text=True, timeout=120
    )


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The suite run once with the plugin's report and `--durations=0`; pytest's own
    collected nodeids."""
    root = tmp_path_factory.mktemp("empty-names")
    (root / "tests" / "cases" / "deep").mkdir(parents=True)
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    (root / "tests" / "test_mod.py").write_text(MODULE)
    for name in CASES:
        (root / "tests" / "cases" / _file(name)).write_text("ok\n")
    listed = _pytest(root, "--collect-only", "-q", "tests")
    assert listed.returncode == 0, listed.stdout + listed.stderr
    collected = {line for line in listed.stdout.splitlines() if line.startswith("tests/")}
    ran = _pytest(root, "-vv", "--durations=0", "--laptime-report=report.json", "tests")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    return {"root": root, "collected": collected, "durations": ran.stdout}


def test_pytest_itself_names_such_items_with_a_trailing_separator(
    suite: dict[str, object],
) -> None:
    collected = suite["collected"]
    assert isinstance(collected, set)
    assert {f"tests/cases/{_file(name)}::" for name in CASES} <= collected
    assert len(collected) == len(CASES) + 2


def test_the_plugins_report_keeps_every_collected_test(suite: dict[str, object]) -> None:
    root = suite["root"]
    assert isinstance(root, Path)
    report = parse_report((root / "report.json").read_bytes(), filename="report.json")
    assert set(report.results["nodeid"]) == suite["collected"]
    assert not [w for w in report.warnings if "no test name" in w], report.warnings
    case = report.results.set_index("nodeid").loc["tests/cases/deep/c.case::"]
    assert case["file"] == "tests/cases/deep/c.case"
    assert case["outcome"] == "passed"


def test_durations_output_keeps_them_too(suite: dict[str, object]) -> None:
    text = str(suite["durations"]).encode()
    report = parse_report(text, filename="pytest.log", format="durations")
    assert set(report.results["nodeid"]) == suite["collected"]


def test_readers_and_the_planner_keep_them(suite: dict[str, object]) -> None:
    root = suite["root"]
    assert isinstance(root, Path)
    local = load_local([root / "report.json"])
    kept, dropped = named_results(local.results)
    assert dropped == 0
    assert set(kept["nodeid"]) == suite["collected"]


def test_only_a_blank_nodeid_is_no_test() -> None:
    # A .py file collected by a conftest's collector is such a test too (Pygments' examples).
    frame = pd.DataFrame(
        {"nodeid": ["tests/x.case::", "", "  ", None, "t.py::test", "tests/ex/py3_test.py::"]}
    )
    kept, dropped = named_results(frame)
    assert dropped == 3
    assert kept["nodeid"].tolist() == ["tests/x.case::", "t.py::test", "tests/ex/py3_test.py::"]


def test_uploaded_they_are_stored_and_sharded(
    suite: dict[str, object], live_server: LiveServer, engine: Engine
) -> None:
    root = suite["root"]
    assert isinstance(root, Path)
    project = make_project(engine)
    sent = upload(
        live_server, project.upload_token, [("report.json", (root / "report.json").read_bytes())]
    )
    assert sent.status_code == 202, sent.text
    doc = wait_done(live_server, project.upload_token, sent.json()["id"])
    assert doc["status"] == "done", doc
    assert not [w for w in doc.get("warnings") or [] if "no test name" in str(w)], doc
    seen: list[str] = []
    for index in (1, 2):
        answer = httpx.get(
            f"{live_server.url}/api/v1/projects/{project.slug}/shards",
            params={"total": "2", "index": str(index), "days": "3650"},
            headers={"Authorization": f"Bearer {project.read_token}"},
            timeout=60,
        )
        assert answer.status_code == 200, answer.text[:400]
        (shard,) = answer.json()["shards"]
        seen += shard["nodeids"]
    assert sorted(seen) == sorted(suite["collected"])  # type: ignore[call-overload]
