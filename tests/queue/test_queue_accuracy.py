"""Queue runs close the loop: a pipeline's queue is stored as a plan of its nodes, each node's
upload names it, and "Did it come true?" and the calibration compare each node with its share,
on a live server with real `pytest --laptime-queue --laptime-upload` nodes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine, text

from analysis.accuracy.plan_record import queue_plan_id
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.queue.nodes import finish, make_suite, node_env, start_node
from tests.queue.test_queue_nodes import junit
from tests.server.conftest import wait_for
from tests.uploads import upload_all


def _accuracy(server: LiveServer, project: ProjectFixture, plan_id: str) -> dict[str, Any]:
    answer = httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/recommendations/accuracy",
        params={"plan": plan_id},
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_queue_nodes_are_compared_with_their_share_of_the_queue(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    where = tmp_path / "suite"
    nodeids = make_suite(where, files=8, per_file=3)
    # Work to share: each test takes half a second, so both nodes have some to run.
    for path in where.glob("test_f*.py"):
        path.write_text("import time\n\n" + path.read_text().replace("pass", "time.sleep(0.5)"))
    history = dict.fromkeys(nodeids, 0.5)
    upload_all(live_server, project.upload_token, [("h.xml", junit(history), {"pipeline": "h"})])
    log = tmp_path / "ran.log"
    procs = [
        start_node(
            where,
            n,
            2,
            node_env(live_server.url, project.upload_token, project.slug, "p-loop", n, log),
            "--laptime-upload",
        )
        for n in (1, 2)
    ]
    for proc in procs:
        code, out = finish(proc)
        assert code == 0, out
    with engine.connect() as conn:
        queue_id = conn.execute(
            text("SELECT id FROM work_queue WHERE project_id = :p AND pipeline = 'p-loop'"),
            {"p": project.id},
        ).scalar_one()
        queued_s = conn.execute(
            text("SELECT sum(predicted_s) FROM work_queue_item WHERE queue_id = :q"),
            {"q": queue_id},
        ).scalar_one()
    plan_id = queue_plan_id(queue_id)

    def measured() -> bool:
        plans = _accuracy(live_server, project, plan_id)["plans"]
        return bool(plans) and all(
            job["wall_s"]["measured"] is not None for job in plans[0]["pipelines"][0]["jobs"]
        )

    wait_for(measured, 60, "both nodes' uploads ingested and matched to the queue's plan")
    body = _accuracy(live_server, project, plan_id)
    (plan,) = body["plans"]
    assert plan["kind"] == "queue"
    assert [job["name"] for job in plan["jobs"]] == ["node 1/2", "node 2/2"]
    # Each node's share: half the seconds the queue itself holds.
    for job in plan["jobs"]:
        assert abs(job["tests_s"] - queued_s / 2) < 1e-6
    (pipeline,) = plan["pipelines"]
    assert pipeline["pipeline"] == "p-loop"
    assert pipeline["complete"] is True
    assert pipeline["unmatched_runs"] == 0
    with engine.connect() as conn:
        stored = {
            str(r[0]): (int(r[1]), float(r[2]))
            for r in conn.execute(
                text(
                    "SELECT labels->>'shard', id,"
                    " COALESCE(job_wall_s, wall_s) + COALESCE(exit_s, 0) FROM run"
                    " WHERE project_id = :p AND pipeline = 'p-loop' AND plan_id = :plan"
                ),
                {"p": project.id, "plan": plan_id},
            )
        }
    assert set(stored) == {"1/2", "2/2"}
    for job in pipeline["jobs"]:
        run_id, wall_s = stored[f"{job['index']}/2"]
        assert job["run_id"] == run_id
        assert abs(job["wall_s"]["measured"] - wall_s) < 1e-3
    # The calibration learns from the queue's nodes as from any plan's jobs.
    assert body["calibration"]["samples"] >= 2
