"""One split verdict, stated once, the same through `laptime plan`, the REST API and the
recommendations page for the same history (the CLI said "not worth it" while its table
marked 2 jobs "chosen")."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import lxml.html  # type: ignore[import-untyped]
import pytest
from click.testing import CliRunner

from app.cli.main import cli
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.uploads import upload_all

# Two files of 5 s each behind 90 s of job setup: two jobs would save 5 s of a 100 s wait
# (under the 10% worth having) for 90 s more machine time.
NOT_WORTH_IT = """\
============================= slowest durations ==============================
5.00s call     a.py::t
5.00s call     b.py::t
============================== 2 passed in 10.00s =============================
"""
# The same tests at 500 s each: two jobs nearly halve the wait.
WORTH_IT = NOT_WORTH_IT.replace("5.00s", "500.00s").replace("10.00s", "1000.00s")
ASK = {"jobs": "2", "granularity": "file", "overhead": "90s"}


@pytest.fixture(scope="module")
def histories(live_server: LiveServer, engine: Any) -> dict[str, ProjectFixture]:
    projects = {}
    for name, text in (("not_worth_it", NOT_WORTH_IT), ("split", WORTH_IT)):
        project = make_project(engine, public=True)
        fields = {"job": "job", "started_at": datetime.now(UTC).isoformat()}
        upload_all(live_server, project.upload_token, [("job.txt", text.encode(), fields)])
        projects[name] = project
    return projects


def cli_plan(tmp_path: Path, text: str, *extra: str) -> str:
    report = tmp_path / "job.txt"
    report.write_text(text)
    args = ["plan", str(report), *(f"--{k}={v}" for k, v in ASK.items()), *extra]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(("verdict", "text"), [("not_worth_it", NOT_WORTH_IT), ("split", WORTH_IT)])
def test_cli_api_and_page_state_one_verdict(
    live_server: LiveServer,
    histories: dict[str, ProjectFixture],
    tmp_path: Path,
    verdict: str,
    text: str,
) -> None:
    project = histories[verdict]
    local = json.loads(cli_plan(tmp_path, text, "--json"))
    api = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/recommendations/split",
        params=ASK,
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    ).json()
    page = httpx.get(f"{live_server.url}/p/{project.slug}/recommendations", params=ASK, timeout=60)
    assert page.status_code == 200
    doc = lxml.html.fromstring(page.text)
    (shown,) = doc.cssselect('[data-stat="verdict"]')

    assert local["verdict"] == api["verdict"] == verdict
    assert shown.text_content() == verdict.replace("_", " ")
    assert local["reason"] == api["reason"]
    for answer in (local, api):
        chosen = [row["jobs"] for row in answer["pareto"] if row["chosen"]]
        best = [row["jobs"] for row in answer["pareto"] if row["best"]]
        assert best == [2]
        # "chosen" only beside a split; the plan then runs that many jobs.
        assert chosen == ([2] if verdict == "split" else [])
        assert answer["after"]["jobs"] == (2 if verdict == "split" else 1)
    heading = doc.cssselect("#plan-jobs")[0].getparent().cssselect("h2")[0].text_content()
    assert heading == ("Proposed jobs" if verdict == "split" else "Jobs: today's layout, kept")

    pretty = cli_plan(tmp_path, text)
    # The verdict is stated once, and no table row contradicts it.
    assert pretty.count(verdict.replace("_", " ")) == 1
    assert ("chosen" in pretty) == (verdict == "split")
    assert ("best, not adopted" in pretty) == (verdict != "split")
