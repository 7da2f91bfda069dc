"""Changes ranked by what they add a week: a small step in a job that runs often outweighs a
larger one in a job that runs rarely. REST, CLI and page give the same order and numbers for
each sort; the weekly seconds equal the per-run delta times an independent count of runs."""

from __future__ import annotations

import json
import random

import httpx
import lxml.html
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, text

from app.cli.main import cli
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.pages.conftest import sign_in_form
from tests.uploads import upload_all

# job: (runs, the run from which test_x is slower, seconds it adds per run)
JOBS = {"often": (80, 40, 0.2), "rare": (40, 22, 0.3)}


def _report(seconds: float, rng: random.Random) -> bytes:
    cases = f'<testcase classname="tests.test_a" name="test_x" time="{seconds:.6f}"/>'
    cases += "".join(
        f'<testcase classname="tests.test_b" name="test_{k}" '
        f'time="{0.2 * rng.uniform(0.99, 1.01):.6f}"/>'
        for k in range(3)
    )
    return (
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        f"{cases}</testsuite></testsuites>"
    ).encode()


@pytest.fixture(scope="module")
def weekly(live_server: LiveServer, engine: Engine) -> ProjectFixture:
    project = make_project(engine)
    rng = random.Random(5)
    uploads = []
    for job, (runs, step_at, added) in JOBS.items():
        for i in range(runs):
            seconds = (1.0 + (added if i >= step_at else 0.0)) * rng.uniform(0.99, 1.01)
            meta = {
                "job": job, "branch": "main", "commit": f"{job}{i:036x}",
                "pipeline": f"{job}-{i}", "machine": "ubuntu-latest",
            }  # fmt: skip
            uploads.append(("r.xml", _report(seconds, rng), meta))
    upload_all(live_server, project.upload_token, uploads)
    return project


def _rest(server: LiveServer, project: ProjectFixture, sort: str) -> dict[str, object]:
    answer = httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/changes",
        params={"kind": "test", "sort": sort},
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    doc: dict[str, object] = answer.json()
    return doc


def test_weekly_seconds_are_the_delta_times_the_runs_a_week(
    live_server: LiveServer, weekly: ProjectFixture, engine: Engine
) -> None:
    changes = _rest(live_server, weekly, "per_run")["changes"]
    assert isinstance(changes, list)
    assert sorted(c["job"] for c in changes) == ["often", "rare"]
    with engine.connect() as conn:
        runs = dict(
            conn.execute(
                text(
                    "SELECT c.job, count(*) FROM run r JOIN cell c ON c.id = r.cell_id "
                    "WHERE r.project_id = :p GROUP BY c.job"
                ),
                {"p": weekly.id},
            ).all()
        )
    assert runs == {job: runs for job, (runs, _, _) in JOBS.items()}
    for change in changes:
        # Every run was stored today: the last four weeks hold one week of runs.
        assert change["per_week_s"] == pytest.approx(change["delta_s"] * runs[change["job"]])
        assert change["per_week_cost"] is not None
        assert change["per_week_cost"] > 0


def test_rest_cli_and_page_rank_alike_for_every_sort(
    live_server: LiveServer, weekly: ProjectFixture, database: Database
) -> None:
    orders = {}
    for sort in ("per_run", "per_week", "cost"):
        rest = _rest(live_server, weekly, sort)
        jobs = [c["job"] for c in rest["changes"]]  # type: ignore[attr-defined]
        orders[sort] = jobs
        printed = CliRunner().invoke(
            cli,
            ["changes", "--project", weekly.slug, "--kind", "test", "--sort", sort, "--json"],
            env={"DATABASE_URL": database.url},
        )
        assert printed.exit_code == 0, printed.output
        assert json.loads(printed.output) == rest
        with httpx.Client(base_url=live_server.url, timeout=60) as client:
            fields = sign_in_form(client)
            client.post("/signin", data={**fields, "token": weekly.read_token})
            page = client.get(f"/p/{weekly.slug}/changes", params={"kind": "test", "sort": sort})
        assert page.status_code == 200
        rows = lxml.html.fromstring(page.text).cssselect("#changes tbody tr[data-change]")
        ids = [int(r.get("data-change")) for r in rows]
        assert ids == [c["id"] for c in rest["changes"]]  # type: ignore[attr-defined]
        weekly_cells = [r.cssselect("td[data-per-week]")[0].get("data-per-week") for r in rows]
        expected = [c["per_week_s"] for c in rest["changes"]]  # type: ignore[attr-defined]
        assert [float(v) for v in weekly_cells] == pytest.approx(expected)
    # A larger step in a job that runs rarely first per run; the often-run job's first a week.
    assert orders["per_run"] == ["rare", "often"]
    assert orders["per_week"] == ["often", "rare"]
    assert orders["cost"] == orders["per_week"]  # one machine type: money follows time
    text_out = (
        CliRunner()
        .invoke(
            cli,
            ["changes", "--project", weekly.slug, "--kind", "test", "--sort", "per_week"],
            env={"DATABASE_URL": database.url},
        )
        .output
    )
    assert text_out.count("    per week: +") == 2
