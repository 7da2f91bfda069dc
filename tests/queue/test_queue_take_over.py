"""An idle node takes over what a slow sibling has not begun, on a live server: begun items
never move, every test runs exactly once, and the report shows who ran what."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from tests.conftest import LiveServer, make_project
from tests.queue.test_queue_api import COLLECTED, Node, status, with_history


def positions(batch: dict[str, Any]) -> dict[int, list[str]]:
    return {item["position"]: item["nodeids"] for item in batch["items"]}


def start(node: Node, claim_id: int, **body: Any) -> dict[str, Any]:
    answer = node.post(f"/{node.queue_id}/claims/{claim_id}/start", body)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def finish(node: Node, claim_id: int, nodeids: list[str]) -> dict[str, Any]:
    results = [{"nodeid": n, "duration_s": 0.1, "outcome": "passed"} for n in nodeids]
    answer = node.post(f"/{node.queue_id}/claims/{claim_id}/finish", {"results": results})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_an_idle_node_takes_over_what_a_slow_sibling_has_not_begun(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    with_history(live_server, project)
    slow, idle = Node(live_server, project, "1"), Node(live_server, project, "2")
    slow.open("run-t", COLLECTED)
    idle.open("run-t", COLLECTED)
    # The slow node's one batch holds the whole queue (a floor that large), begun in segments.
    held = slow.claim(segmented=True, min_batch_s=1000.0)
    assert held["state"] == "batch"
    mine = positions(held)
    assert len(mine) == len(COLLECTED)
    begun = set(held["started"])
    assert begun
    assert begun < set(mine)  # the first segment only
    taken = idle.claim(segmented=True)
    assert taken["state"] == "batch"
    assert taken["taken_over_from"] == "1"
    theirs = positions(taken)
    assert not set(theirs) & begun  # a begun item never moves
    assert max(theirs) == max(mine)  # the back of the batch, which the slow node reaches last
    # The slow node goes on: the next segments never include what was taken over.
    ran_slow = [n for p in sorted(begun) for n in mine[p]]
    while True:
        more = start(slow, held["claim_id"], segment=True)
        assert not set(more["started"]) & set(theirs)
        ran_slow += [n for p in more["started"] for n in mine[p]]
        if not more["started"]:
            break
    ran_idle = [n for p in theirs for n in theirs[p]]
    assert start(idle, taken["claim_id"])["unstarted"] == 0
    assert finish(slow, held["claim_id"], ran_slow)["handed_back"] == 0
    assert finish(idle, taken["claim_id"], ran_idle)["handed_back"] == 0
    assert sorted(ran_slow + ran_idle) == sorted(COLLECTED)  # exactly once
    assert idle.claim()["state"] == "done"
    report = status(live_server, project, slow.queue_id or 0)
    assert report["done"]
    assert report["ran_twice"] == []
    assert report["never_ran"] == []
    tests = {n["node"]: sum(b["tests"] for b in n["batches"]) for n in report["nodes"]}
    assert tests == {"1": len(ran_slow), "2": len(ran_idle)}


def test_a_batch_begun_whole_is_never_taken_over(live_server: LiveServer, engine: Engine) -> None:
    project = make_project(engine)
    with_history(live_server, project)
    busy, idle = Node(live_server, project, "1"), Node(live_server, project, "2")
    busy.open("run-w", COLLECTED)
    idle.open("run-w", COLLECTED)
    held = busy.claim(min_batch_s=1000.0)  # not segmented: every item begun at the claim
    assert set(held["started"]) == set(positions(held))
    answer = idle.claim(segmented=True)
    assert answer["state"] == "wait"  # nothing to take: the busy node's lease may yet lapse
    assert answer["items"] == []
