"""The queue's REST API on a live server and embedded Postgres: open or join, claims in
shrinking batches, exactly once, lease expiry, a retried job's replay, disagreeing nodes,
budget stops."""

from __future__ import annotations

import time
from typing import Any

import httpx
from sqlalchemy import Engine, text

from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.server.test_plan_accuracy import junit
from tests.uploads import upload_all

COLLECTED = [f"tests/test_{n}.py::test_one" for n in "abcdefgh"]


class Node:
    """One CI node talking to the queue API."""

    def __init__(self, server: LiveServer, project: ProjectFixture, node: str, attempt: int = 1):
        self.base = f"{server.url}/api/v1/projects/{project.slug}/queues"
        self.headers = {"Authorization": f"Bearer {project.upload_token}"}
        self.who = {"node": node, "attempt": attempt}
        self.queue_id: int | None = None

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(f"{self.base}{path}", json=body, headers=self.headers, timeout=60)

    def open(self, pipeline: str, collected: list[str], nodes: int = 2) -> httpx.Response:
        answer = self.post(
            "", {**self.who, "pipeline": pipeline, "collected": collected, "nodes": nodes}
        )
        if answer.status_code == 200:
            self.queue_id = answer.json()["queue_id"]
        return answer

    def claim(self, **extra: Any) -> dict[str, Any]:
        answer = self.post(f"/{self.queue_id}/claims", {**self.who, **extra})
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    def finish(self, batch: dict[str, Any]) -> None:
        results = [
            {"nodeid": n, "duration_s": 0.1, "outcome": "passed"}
            for item in batch["items"]
            for n in item["nodeids"]
        ]
        path = f"/{self.queue_id}/claims/{batch['claim_id']}"
        assert self.post(f"{path}/start", {}).status_code == 200
        answer = self.post(f"{path}/finish", {"results": results})
        assert answer.status_code == 200, answer.text

    def drain(self, **extra: Any) -> list[str]:
        ran: list[str] = []
        while True:
            batch = self.claim(**extra)
            if batch["state"] != "batch":
                return ran
            ran += [n for item in batch["items"] for n in item["nodeids"]]
            self.finish(batch)


def status(server: LiveServer, project: ProjectFixture, queue_id: int) -> dict[str, Any]:
    answer = httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/queues/{queue_id}",
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def with_history(server: LiveServer, project: ProjectFixture) -> None:
    seconds = [30.0, 20.0, 10.0, 5.0, 4.0, 3.0, 2.0, 1.0]
    report = junit(dict(zip(COLLECTED, seconds, strict=True)))
    upload_all(server, project.upload_token, [("h.xml", report, {"pipeline": "history"})])


def test_two_nodes_run_each_test_exactly_once_heaviest_first(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    with_history(live_server, project)
    one, two = Node(live_server, project, "1"), Node(live_server, project, "2")
    first = one.open("run-1", [*COLLECTED, "tests/test_new.py::test_one"])
    assert first.status_code == 200, first.text
    assert first.json()["opened"] is True
    assert first.json()["estimated"] == ["tests/test_new.py::test_one"]
    again = two.open("run-1", list(reversed([*COLLECTED, "tests/test_new.py::test_one"])))
    assert again.json()["opened"] is False
    assert again.json()["queue_id"] == first.json()["queue_id"]
    batch = one.claim()
    assert batch["items"][0]["nodeids"] == ["tests/test_a.py::test_one"]  # heaviest first
    one.finish(batch)
    ran = [n for item in batch["items"] for n in item["nodeids"]]
    sizes = []
    while True:
        for node in (two, one):
            batch = node.claim()
            if batch["state"] == "batch":
                sizes.append(batch["predicted_s"])
                ran += [n for item in batch["items"] for n in item["nodeids"]]
                node.finish(batch)
        if batch["state"] == "done":
            break
    assert sorted(ran) == sorted([*COLLECTED, "tests/test_new.py::test_one"])  # exactly once
    assert sizes[-1] <= sizes[0]  # batches shrink as the queue empties
    report = status(live_server, project, first.json()["queue_id"])
    assert report["done"]
    assert report["never_ran"] == []
    assert report["ran_twice"] == []
    assert {n["node"] for n in report["nodes"]} == {"1", "2"}
    assert report["idle_tail_s"] is not None


def test_nodes_that_collected_other_tests_are_refused(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    one, two = Node(live_server, project, "1"), Node(live_server, project, "2")
    assert one.open("run-x", COLLECTED).status_code == 200
    refused = two.open("run-x", [*COLLECTED[:-1], "tests/test_z.py::test_one"])
    assert refused.status_code == 409
    assert refused.json()["code"] == "queue-collected-mismatch"
    assert "tests/test_z.py::test_one" in refused.json()["detail"]
    assert "tests/test_h.py::test_one" in refused.json()["detail"]


def test_a_node_that_stops_beating_loses_its_batch(live_server: LiveServer, engine: Engine) -> None:
    project = make_project(engine)
    with_history(live_server, project)
    dead, alive = Node(live_server, project, "1"), Node(live_server, project, "2")
    dead.open("run-k", COLLECTED)
    alive.open("run-k", COLLECTED)
    lost = dead.claim(lease_s=1.0)
    lost_ids = {n for item in lost["items"] for n in item["nodeids"]}
    ran = set()
    while True:
        batch = alive.claim()
        if batch["state"] == "done":
            break
        if batch["state"] == "wait":
            time.sleep(batch["retry_after_s"])  # the protocol's own back-off, not a timing
            continue
        ran |= {n for item in batch["items"] for n in item["nodeids"]}
        alive.finish(batch)
    assert ran == set(COLLECTED)
    assert lost_ids <= ran
    report = status(live_server, project, dead.queue_id or 0)
    states = {b["state"] for n in report["nodes"] if n["node"] == "1" for b in n["batches"]}
    assert states == {"expired"}


def test_a_retried_job_replays_what_it_ran_then_takes_the_rest(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    with_history(live_server, project)
    one, two = Node(live_server, project, "1"), Node(live_server, project, "2")
    one.open("run-r", COLLECTED)
    two.open("run-r", COLLECTED)
    first = one.claim()
    one.finish(first)
    mine = {n for item in first["items"] for n in item["nodeids"]}
    # Node 1 fails; node 2 drains the queue; then node 1's job is retried.
    others = set(two.drain())
    assert mine | others == set(COLLECTED)
    assert not mine & others
    retry = Node(live_server, project, "1", attempt=2)
    opened = retry.open("run-r", COLLECTED)
    assert opened.json()["replay_items"] == len(first["items"])
    replayed = retry.drain()
    assert set(replayed) == mine
    report = status(live_server, project, retry.queue_id or 0)
    assert report["rerun_by_retry"] == len(mine)
    assert report["never_ran"] == []


def test_a_budget_too_small_stops_and_names_what_does_not_fit(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    with_history(live_server, project)
    node = Node(live_server, project, "1")
    node.open("run-b", COLLECTED, nodes=1)
    ran = node.drain(remaining_s=8.0)
    stop = node.claim(remaining_s=8.0)
    assert stop["state"] == "budget"
    not_fit = {n for item in stop["not_fit"] for n in item["nodeids"]}
    assert "tests/test_a.py::test_one" in not_fit
    assert set(ran).isdisjoint(not_fit)
    released = node.post(f"/{node.queue_id}/release", {"node": "1", "reason": "budget"})
    left = {n for item in released.json()["pending"] for n in item["nodeids"]}
    assert left == set(COLLECTED) - set(ran)
    report = status(live_server, project, node.queue_id or 0)
    assert set(report["never_ran"]) == left
    assert report["budget_stops"][0]["node"] == "1"


def test_claims_are_recorded_as_events(live_server: LiveServer, engine: Engine) -> None:
    project = make_project(engine)
    node = Node(live_server, project, "1")
    node.open("run-e", COLLECTED, nodes=1)
    node.drain()
    with engine.connect() as conn:
        kinds = {
            str(r[0])
            for r in conn.execute(
                text("SELECT kind FROM work_queue_event WHERE queue_id = :q"), {"q": node.queue_id}
            )
        }
    assert {"open", "claim", "start", "finish"} <= kinds
