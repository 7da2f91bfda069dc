"""The PR summary lists new flaky tests and quarantined failures apart from real failures:
the compare answer (REST), `laptime compare` and `laptime-ci compare`'s step summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pandas as pd
import pytest
from click.testing import CliRunner

from analysis.compare.runs import compare_runs
from app.cli.main import cli
from laptime_ci.cli import main as client_main
from laptime_ci.compare_md import markdown
from tests.conftest import Database, LiveServer, ProjectFixture
from tests.uploads import upload_all


def report(outcomes: dict[str, tuple[str, bool]]) -> bytes:
    """A laptime JSON report: nodeid -> (outcome, passed on a retry)."""
    tests = [
        {"nodeid": n, "outcome": o, "duration_s": 1.0, "attempts": 2 if f else 1, "flaky": f}
        for n, (o, f) in outcomes.items()
    ]
    return json.dumps({"format": "laptime-json", "version": 1, "tests": tests}).encode()


STEADY = {
    "t.py::test_ok": ("passed", False),
    "t.py::test_breaks": ("passed", False),
    "t.py::test_held": ("passed", False),
    "t.py::test_wobbles": ("passed", False),
}
HEAD = {
    "t.py::test_ok": ("passed", False),
    "t.py::test_breaks": ("failed", False),  # a real failure
    "t.py::test_held": ("failed", False),  # quarantined: not a real failure
    "t.py::test_wobbles": ("passed", True),  # passed on a retry: newly flaky
}


def test_compare_runs_sets_quarantined_and_new_flaky_apart() -> None:
    rows: list[dict[str, Any]] = []
    for run_id in range(3):
        rows += [
            {"run_id": run_id, "nodeid": n, "outcome": o, "duration_s": 1.0, "flaky": f}
            for n, (o, f) in STEADY.items()
        ]
    head = pd.DataFrame(
        [
            {"run_id": 9, "nodeid": n, "outcome": o, "duration_s": 1.0, "flaky": f}
            for n, (o, f) in HEAD.items()
        ]
    )
    answer = compare_runs(
        pd.DataFrame({"run_id": [9], "wall_s": [5.0]}),
        head,
        pd.DataFrame({"run_id": range(3), "wall_s": [5.0] * 3}),
        pd.DataFrame(rows),
        quarantined=frozenset({"t.py::test_held"}),
    )
    assert answer.new_failures == ("t.py::test_breaks",)
    assert answer.quarantined_failures == ("t.py::test_held",)
    assert answer.new_flaky == ("t.py::test_wobbles",)


def test_pr_summary_lists_them_apart(
    live_server: LiveServer,
    project: ProjectFixture,
    database: Database,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uploads = [
        ("r.json", report(STEADY) + b" " * i, {"pipeline": f"b{i}", "branch": "main"})
        for i in range(3)
    ]
    uploads.append(("r.json", report(HEAD), {"pipeline": "pr-3", "branch": "topic"}))
    upload_all(live_server, project.upload_token, uploads)
    added = httpx.post(
        f"{live_server.url}/api/v1/projects/{project.slug}/quarantine",
        json={"nodeid": "t.py::test_held"},
        headers={"Authorization": f"Bearer {project.admin_token}"},
        timeout=60,
    )
    assert added.status_code == 200, added.text
    rest = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/compare",
        params={"pipeline": "pr-3"},
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    ).json()
    assert rest["new_failures"] == ["t.py::test_breaks"]
    assert rest["quarantined_failures"] == ["t.py::test_held"]
    assert rest["new_flaky"] == ["t.py::test_wobbles"]
    text = CliRunner().invoke(
        cli,
        ["compare", "--project", project.slug, "--pipeline", "pr-3"],
        env={"DATABASE_URL": database.url},
    )
    assert "new failures: 1\n  t.py::test_breaks" in text.output
    assert "quarantined failures (not failing the job): 1\n  t.py::test_held" in text.output
    assert "new flaky: 1\n  t.py::test_wobbles" in text.output
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("LAPTIME_READ_TOKEN", project.read_token)
    args = ["--url", live_server.url, "--project", project.slug, "--pipeline", "pr-3"]
    assert client_main(["compare", *args]) == 0
    written = summary.read_text()
    link = f"{live_server.url}/api/v1/projects/{project.slug}/compare?pipeline=pr-3&base=main"
    assert written.rstrip("\n") == markdown(rest, link=link).rstrip("\n")
    real = written.split("**New failures** (1)")[1].split("**")[0]
    assert "test_breaks" in real
    assert "test_held" not in real
    held = written.split("**Quarantined failures (reported, not failing the job)** (1)")[1]
    assert "test_held" in held.split("**")[0]
    assert "`t.py::test_wobbles`" in written.split("**New flaky tests** (1)")[1].split("**")[0]
