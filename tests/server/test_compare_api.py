"""GET /compare over a live server: numbers equal a recomputation from the uploaded reports."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from app.cli.main import cli
from laptime_ci.cli import main as client_main
from tests.conftest import Database, LiveServer, ProjectFixture
from tests.factories import junit_total_seconds, junit_xml
from tests.uploads import upload_all


def test_compare_against_base_runs(
    live_server: LiveServer, project: ProjectFixture, database: Database
) -> None:
    base = [junit_xml(6, seed=s) for s in range(4)]
    head = junit_xml(6, seed=99, failures=1)
    uploads = [
        ("r.xml", body, {"pipeline": f"base-{i}", "branch": "main", "commit": f"{i:040x}"})
        for i, body in enumerate(base)
    ]
    uploads.append(("r.xml", head, {"pipeline": "pr-1", "branch": "feature", "commit": "f" * 40}))
    upload_all(live_server, project.upload_token, uploads)
    url = f"{live_server.url}/api/v1/projects/{project.slug}/compare"
    auth = {"Authorization": f"Bearer {project.read_token}"}
    response = httpx.get(url, params={"pipeline": "pr-1", "base": "main"}, headers=auth)
    answer = response.json()
    assert response.status_code == 200, answer
    assert answer["base_runs"] == 4
    # A JUnit file reports no wall: unknown is null, not NaN or 0.
    assert answer["wall"] == {"here": None, "base_median": None, "base_spread": None}
    times = [junit_total_seconds(b) for b in base]
    assert abs(answer["test_time"]["base_median"] - statistics.median(times)) < 1e-6
    assert abs(answer["test_time"]["here"] - junit_total_seconds(head)) < 1e-6
    assert len(answer["new_failures"]) == 1, answer
    unknown = httpx.get(url, params={"pipeline": "nope"}, headers=auth)
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "pipeline-unknown"
    nobase = httpx.get(url, params={"pipeline": "pr-1", "base": "dev"}, headers=auth)
    assert nobase.status_code == 422
    # `laptime compare --json` answers what REST answers; the text names the same numbers.
    runner = CliRunner()
    env = {"DATABASE_URL": database.url}
    args = ["compare", "--project", project.slug, "--pipeline", "pr-1"]
    printed = runner.invoke(cli, [*args, "--json"], env=env)
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output) == answer
    text = runner.invoke(cli, args, env=env)
    assert f"({answer['base_runs']} base runs)" in text.output
    assert "new failures: 1" in text.output
    gone = runner.invoke(cli, ["compare", "--project", project.slug, "--pipeline", "x"], env=env)
    assert gone.exit_code == 1


def test_real_client_writes_the_step_summary(
    live_server: LiveServer,
    project: ProjectFixture,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    base = [junit_xml(5, seed=s) for s in range(3)]
    head = junit_xml(7, seed=5)  # two new tests
    uploads = [("r.xml", b, {"pipeline": f"b{i}", "branch": "main"}) for i, b in enumerate(base)]
    uploads.append(("r.xml", head, {"pipeline": "pr-2", "branch": "topic"}))
    upload_all(live_server, project.upload_token, uploads)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("LAPTIME_READ_TOKEN", project.read_token)
    args = ["--url", live_server.url, "--project", project.slug, "--pipeline", "pr-2"]
    assert client_main(["compare", *args]) == 0
    text = summary.read_text()
    median = statistics.median(junit_total_seconds(b) for b in base)
    assert "<!-- laptime-compare -->" in text
    assert f"{median:.2f}s" in text
    assert "**New tests** (2)" in text
    assert "2 new" in capsys.readouterr().out
    # --json prints exactly the REST answer.
    assert client_main(["compare", *args, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    rest = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/compare",
        params={"pipeline": "pr-2", "base": "main"},
        headers={"Authorization": f"Bearer {project.read_token}"},
    ).json()
    assert printed == rest
