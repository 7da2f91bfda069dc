"""A node's pace on a live server: where one item is most of a node's share, a paced node's
first claim is a probe (the lightest items), and a node measured markedly slower than a live
sibling passes the items it would finish after the queue's projected end, which the faster
sibling then takes; every test still runs exactly once."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, text

from tests.conftest import LiveServer, make_project
from tests.queue.test_queue_api import COLLECTED, Node, with_history

# with_history: test_a 30 s, b 20, c 10, d 5, e 4, f 3, g 2, h 1.
SECONDS = dict(zip(COLLECTED, [30.0, 20.0, 10.0, 5.0, 4.0, 3.0, 2.0, 1.0], strict=True))


def names(batch: dict[str, Any]) -> list[str]:
    return [n for item in batch["items"] for n in item["nodeids"]]


def test_a_probe_first_then_a_slow_node_leaves_the_heavy_item_to_a_faster_one(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    with_history(live_server, project)
    slow, fast = Node(live_server, project, "1"), Node(live_server, project, "2")
    slow.open("run-pace", COLLECTED)
    fast.open("run-pace", COLLECTED)
    ran: list[str] = []
    # Unpaced (a script on the API), the first claim is the heaviest item, as before.
    # Paced, the first claim of each node is the lightest item: its pace is measured first.
    probe = fast.claim(paced=True)
    assert names(probe) == ["tests/test_h.py::test_one"]
    ran += names(probe)
    fast.finish(probe)
    heavy = fast.claim(paced=True, pace=1.0)  # measured: now the heaviest first
    assert names(heavy)[0] == "tests/test_a.py::test_one"
    ran += names(heavy)
    probe = slow.claim(paced=True)
    assert names(probe) == ["tests/test_g.py::test_one"]
    ran += names(probe)
    slow.finish(probe)
    # Twice as slow as its sibling, which is live (its claim is open): test_b (20 s, 40 s at
    # this pace) would end after the queue's projected end, so it is passed, not taken.
    passed = slow.claim(paced=True, pace=2.0)
    assert passed["state"] == "batch"
    assert "tests/test_b.py::test_one" not in names(passed)
    assert max(SECONDS[n] for n in names(passed)) < SECONDS["tests/test_b.py::test_one"]
    ran += names(passed)
    fast.finish(heavy)
    taken = fast.claim(paced=True, pace=1.0)
    assert names(taken)[0] == "tests/test_b.py::test_one"  # the faster node takes it
    ran += names(taken)
    fast.finish(taken)
    slow.finish(passed)
    for node in (slow, fast):
        ran += node.drain(paced=True, pace=1.0)
    assert sorted(ran) == sorted(COLLECTED)  # exactly once
    with engine.connect() as conn:
        paces = conn.execute(
            text("SELECT node, pace FROM work_queue_claim WHERE queue_id = :q ORDER BY id"),
            {"q": slow.queue_id},
        ).all()
        kinds = conn.execute(
            text(
                "SELECT node, detail ? 'probe', coalesce((detail->>'passed')::int, 0)"
                " FROM work_queue_event WHERE queue_id = :q AND kind = 'claim' ORDER BY id"
            ),
            {"q": slow.queue_id},
        ).all()
    assert paces[:4] == [("2", None), ("2", 1.0), ("1", None), ("1", 2.0)]  # as declared
    assert [k[1] for k in kinds[:4]] == [True, False, True, False]  # the probes
    assert kinds[3][2] >= 1  # the slow node's claim passed test_b


def test_a_slow_node_with_only_heavy_items_left_waits_for_its_faster_sibling(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    with_history(live_server, project)
    slow, fast = Node(live_server, project, "1"), Node(live_server, project, "2")
    slow.open("run-wait", COLLECTED)
    fast.open("run-wait", COLLECTED)
    first = fast.claim(paced=True)  # its probe
    fast.finish(first)
    busy = fast.claim(paced=True, pace=1.0)  # test_a, begun whole: nothing to take over
    assert names(busy) == ["tests/test_a.py::test_one"]
    ran = names(first) + names(busy)
    probe = slow.claim(paced=True)
    slow.finish(probe)
    ran += names(probe)
    # Four times slower: it takes the light items and passes test_b and test_c ...
    while (batch := slow.claim(paced=True, pace=4.0))["state"] == "batch":
        assert not {"tests/test_b.py::test_one", "tests/test_c.py::test_one"} & set(names(batch))
        slow.finish(batch)
        ran += names(batch)
    # ... and, with only those left, waits for its sibling rather than ending the pipeline.
    assert batch["state"] == "wait"
    assert batch["retry_after_s"] == 0.5
    fast.finish(busy)
    left = fast.drain(paced=True, pace=1.0)
    assert sorted(left) == ["tests/test_b.py::test_one", "tests/test_c.py::test_one"]
    assert sorted(ran + left) == sorted(COLLECTED)  # exactly once
    assert slow.claim(paced=True, pace=4.0)["state"] == "done"


def test_a_waiting_node_asks_again_by_what_its_siblings_have_left(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    with_history(live_server, project)
    busy, idle = Node(live_server, project, "1"), Node(live_server, project, "2")
    busy.open("run-retry", COLLECTED)
    idle.open("run-retry", COLLECTED)
    held = busy.claim(min_batch_s=1000.0)  # the whole queue, 75 s predicted, begun at once
    assert len(names(held)) == len(COLLECTED)
    assert idle.claim()["retry_after_s"] == 2.0  # 75 s left: the most it waits
    # Only test_g and test_h (3 s predicted) in the next queue: half of that, about 1.5 s.
    light = ["tests/test_g.py::test_one", "tests/test_h.py::test_one"]
    busy.open("run-retry-2", light)
    idle.open("run-retry-2", light)
    busy.claim(min_batch_s=1000.0)
    answer = idle.claim()
    assert answer["state"] == "wait"
    assert 1.0 < answer["retry_after_s"] <= 1.5
