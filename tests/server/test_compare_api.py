"""GET /compare over a live server: numbers equal a recomputation from the uploaded reports."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from app.cli.main import cli
from laptime_ci.cli import main as client_main
from laptime_ci.compare_md import markdown
from tests.conftest import Database, LiveServer, ProjectFixture
from tests.factories import junit_total_seconds, junit_xml
from tests.server.test_golden_answers import check, normalise
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


def test_compare_prices_the_change_and_says_the_split_plan_no_longer_fits(
    live_server: LiveServer, project: ProjectFixture, database: Database, engine: Engine
) -> None:
    from analysis.accuracy.plan_record import PlanRecord, PredictedJob
    from app.db.plans import store_plan

    base = junit_xml(6, seed=3)
    # The head: test_case_0 takes 30 s longer, everything else as on main.
    head = re.sub(
        rb'name="test_case_0" time="([0-9.]+)"',
        lambda m: b'name="test_case_0" time="%.6f"' % (float(m.group(1)) + 30.0),
        base,
    )
    fields = {"branch": "main", "machine": "linux"}
    uploads = [("r.xml", base, {**fields, "pipeline": f"main-{i}"}) for i in range(4)]
    uploads.append(("r.xml", head, {**fields, "pipeline": "pr-9", "branch": "topic"}))
    upload_all(live_server, project.upload_token, uploads)
    admin = {"Authorization": f"Bearer {project.admin_token}"}
    projects = f"{live_server.url}/api/v1/projects/{project.slug}"
    put = httpx.put(f"{projects}/catalogue", json={"name": "github"}, headers=admin)
    assert put.status_code == 200, put.text
    auth = {"Authorization": f"Bearer {project.read_token}"}
    url = f"{projects}/compare"

    response = httpx.get(url, params={"pipeline": "pr-9"}, headers=auth)
    check("api/compare.json", _golden(response, project))
    answer = response.json()
    assert answer["plan_fit"] is None  # no split plan stored yet
    [slow] = answer["slower"]
    assert slow["nodeid"].endswith("test_case_0")
    added_s = junit_total_seconds(head) - junit_total_seconds(base)
    assert (
        abs(answer["machine_time"]["here"] - answer["machine_time"]["base_median"] - added_s) < 1e-6
    )
    # GitHub's linux runner: $0.006 a minute.
    cost = answer["cost"]
    assert cost["unit"] == "USD"
    assert abs(cost["delta"] - added_s / 60 * 0.006) < 1e-9
    assert abs(cost["here"] - junit_total_seconds(head) / 60 * 0.006) < 1e-9
    assert answer["unpriced_machines"] == []

    # A stored split plan: the slowed test's file in job 1, the rest in job 2, 40 s each.
    slow_file = slow["nodeid"].split("::")[0]
    others = sorted({n.split("::")[0] for n in _nodeids(head)} - {slow_file})
    jobs = tuple(
        PredictedJob(
            index=i,
            name=f"part {i}",
            wall_s=40.0,
            tests_s=35.0,
            setup_s=5.0,
            members=m,
            members_total=len(m),
        )
        for i, m in ((1, (slow_file,)), (2, tuple(others)))
    )
    with engine.begin() as conn:
        store_plan(conn, project.id, PlanRecord("plan-a", "split", "", jobs))
    response = httpx.get(url, params={"pipeline": "pr-9"}, headers=auth)
    check("api/compare-plan.json", _golden(response, project))
    answer = response.json()
    fit = answer["plan_fit"]
    assert fit["plan_id"] == "plan-a"
    assert not fit["fits"]
    [overrun] = fit["overruns"]
    assert overrun["name"] == "part 1"
    assert abs(overrun["overrun_s"] - added_s) < 1e-6
    assert fit["target_wait_s"] == 40.0

    # The CLI says the same; the client's summary and PR markdown too.
    env = {"DATABASE_URL": database.url}
    text = CliRunner().invoke(
        cli, ["compare", "--project", project.slug, "--pipeline", "pr-9"], env=env
    )
    assert text.exit_code == 0, text.output
    assert f"(change +${added_s / 60 * 0.006:.4f})" in text.output
    assert (
        f"split plan plan-a no longer fits: its target wait is 40.0s, now {40 + added_s:.1f}s"
        in text.output
    )
    assert f"({added_s:.1f}s over the target wait)" in text.output
    md = markdown(answer)
    assert "| cost | $" in md
    assert "**Split plan no longer fits**" in md
    assert f"({added_s:.1f}s over)" in md


def _nodeids(xml: bytes) -> list[str]:
    """The nodeids laptime gives junit_xml's test cases."""
    return [
        f"{m.group(1).decode().replace('.', '/')}.py::{m.group(2).decode()}"
        for m in re.finditer(rb'classname="([^"]+)" name="([^"]+)"', xml)
    ]


def _golden(response: httpx.Response, project: ProjectFixture) -> bytes:
    """The answer's bytes as a script reads them, with this run's slug in placeholders."""
    body = normalise(response.content, {project.slug: "<slug>"})
    # Sums of the same seconds in another row order differ in the last bits: 9 digits hold.
    body = re.sub(rb"-?\d+\.\d{7,}(?:e-?\d+)?", lambda m: f"{float(m.group(0)):.9g}".encode(), body)
    return f"{response.status_code}\n".encode() + body
