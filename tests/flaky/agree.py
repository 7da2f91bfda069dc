"""Flaky numbers through the three doors: REST JSON, `laptime flaky` (JSON and text) and the
Flaky page (and the overview's week total) must say the same."""

from __future__ import annotations

import json
from typing import Any

import httpx
import lxml.html  # type: ignore[import-untyped]
from click.testing import CliRunner

from app.cli.main import cli
from figures.humanize import count_text, duration_text, money_text, percent_text
from tests.conftest import Database, LiveServer, ProjectFixture
from tests.pages.conftest import session_cookies

COST_CELLS = ("machine_s", "rerun_s", "job_retry_s", "pipeline_rerun_s", "wait_s")


def rest_flaky(server: LiveServer, project: ProjectFixture, **params: Any) -> dict[str, Any]:
    """GET .../flaky with the read token."""
    response = httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/flaky",
        params=params,
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=120,
    )
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def _page(server: LiveServer, project: ProjectFixture, path: str) -> Any:
    response = httpx.get(
        f"{server.url}/p/{project.slug}{path}",
        cookies=session_cookies(server.url, project.read_token),
        timeout=120,
    )
    assert response.status_code == 200, response.text
    return lxml.html.fromstring(response.text)


def _money(cost: dict[str, Any]) -> str:
    return "–" if cost["usd"] is None else money_text(cost["usd"])


def assert_flaky_agrees(server: LiveServer, database: Database, project: ProjectFixture) -> int:
    """Compare every flaky figure across the three; return how many were compared."""
    answer = rest_flaky(server, project, limit=1000)
    env = {"DATABASE_URL": database.url}
    printed = CliRunner().invoke(
        cli, ["flaky", "--project", project.slug, "--limit", "1000", "--json"], env=env
    )
    assert printed.exit_code == 0, printed.output
    assert json.loads(printed.output) == answer
    compared = 1
    text = CliRunner().invoke(cli, ["flaky", "--project", project.slug, "--limit", "1000"], env=env)
    assert text.exit_code == 0, text.output
    for test in answer["tests"]:
        line = next(x for x in text.output.splitlines() if x.startswith(f"  {test['nodeid']}"))
        assert f"{count_text(test['flaky_runs'])}/{count_text(test['runs'])}" in line
        assert f"machine {duration_text(test['cost']['machine_s'])}" in line
        assert f"wait {duration_text(test['cost']['wait_s'])}" in line
        compared += 3
    doc = _page(server, project, "/flaky")
    rows = doc.xpath("//table[@id='flaky-tests']/tbody/tr[@data-nodeid]")
    assert [r.get("data-nodeid") for r in rows] == [t["nodeid"] for t in answer["tests"]]
    for row, test in zip(rows, answer["tests"], strict=True):
        cells = [c.text_content().strip() for c in row.xpath("td")]
        want = [
            count_text(test["flaky_runs"]),
            count_text(test["runs"]),
            percent_text(test["rate"]),
            *(duration_text(test["cost"][name]) for name in COST_CELLS),
            _money(test["cost"]),
        ]
        assert cells[1:10] == want, test["nodeid"]
        marks = row.xpath(".//td[@class='timeline']/span")
        assert [int(m.get("data-flaky")) for m in marks] == [d["flaky"] for d in test["timeline"]]
        compared += len(want) + 1
    for table, rows_of in (
        ("flaky-files", "by_file"),
        ("flaky-jobs", "by_job"),
        ("flaky-weeks", "by_week"),
    ):
        got = [
            [c.text_content().strip() for c in tr.xpath("td")]
            for tr in doc.xpath(f"//table[@id='{table}']/tbody/tr[not(td[@class='empty'])]")
        ]
        want_rows = [
            [
                row["key"] or "–",
                count_text(row["tests"]),
                *(duration_text(row[name]) for name in COST_CELLS),
                _money(row),
            ]
            for row in answer[rows_of]
        ]
        assert got == want_rows, table
        compared += sum(map(len, want_rows))
    for key, stat in (("machine_s", "flaky-machine"), ("wait_s", "flaky-wait")):
        (value,) = doc.xpath(f"//*[@data-stat='{stat}']")
        assert value.text_content() == duration_text(answer["total"][key])
        compared += 1
    (usd,) = doc.xpath("//*[@data-stat='flaky-usd']")
    assert usd.text_content() == _money(answer["total"])
    (week,) = doc.xpath("//*[@data-stat='flaky-week']")
    assert week.text_content() == duration_text(answer["this_week"]["machine_s"])
    (overview_week,) = _page(server, project, "").xpath("//*[@data-stat='flaky-week']")
    assert overview_week.text_content() == duration_text(answer["this_week"]["machine_s"])
    return compared + 3
