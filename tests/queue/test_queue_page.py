"""The queue page and `laptime queue show`: each node's batches, the idle tail, budget stops,
retries and tests run nowhere, with a hostile pipeline id shown literally."""

from __future__ import annotations

import httpx
import lxml.html  # type: ignore[import-untyped]
from click.testing import CliRunner
from sqlalchemy import Engine

from app.cli.main import cli
from tests.conftest import Database, LiveServer, make_project
from tests.queue.test_queue_api import COLLECTED, Node, with_history

PIPELINE = "pipe<script>alert(1)</script>"


def test_the_page_shows_each_node_and_what_ran_nowhere(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine, public=True)
    with_history(live_server, project)
    one, two = Node(live_server, project, "1"), Node(live_server, project, "2")
    one.open(PIPELINE, COLLECTED)
    two.open(PIPELINE, COLLECTED)
    one.finish(one.claim())
    two.drain(remaining_s=3.0)  # a tight budget: the heavy items are left
    stop = two.claim(remaining_s=3.0)
    assert stop["state"] == "budget"
    two.post(f"/{two.queue_id}/release", {"node": "2", "reason": "budget"})
    page = httpx.get(f"{live_server.url}/p/{project.slug}/queues", timeout=60)
    assert page.status_code == 200, page.text
    assert "<script>alert(1)" not in page.text
    doc = lxml.html.fromstring(page.text)
    assert doc.cssselect("span.pipeline")[0].text_content() == PIPELINE
    nodes = {row.get("data-node") for row in doc.cssselect("table.batches tbody tr")}
    assert nodes == {"1", "2"}
    never = [li.text_content() for li in doc.cssselect("#never-ran li")]
    assert never
    assert set(never) <= set(COLLECTED)
    assert doc.cssselect("#budget-stops li")
    assert doc.cssselect("#fig-queue")


def test_cli_show_lists_what_ran_nowhere_and_fails(
    live_server: LiveServer, engine: Engine, database: Database
) -> None:
    project = make_project(engine)
    node = Node(live_server, project, "1")
    node.open("cli-1", COLLECTED, nodes=1)
    batch = node.claim()
    node.finish(batch)
    node.post(f"/{node.queue_id}/release", {"node": "1", "reason": "budget"})
    env = {"DATABASE_URL": database.url, "LAPTIME_HOME": str(database.home)}
    result = CliRunner().invoke(
        cli, ["queue", "show", "--project", project.slug, "--pipeline", "cli-1"], env=env
    )
    ran = {n for item in batch["items"] for n in item["nodeids"]}
    assert ran != set(COLLECTED)  # the first batch is half the queue at most
    assert result.exit_code == 1, result.output
    assert "node 1" in result.output
    for nodeid in set(COLLECTED) - ran:
        assert nodeid in result.output
