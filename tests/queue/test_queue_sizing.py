"""Batch sizing, segments and take-over as pure functions, and a simulated pipeline with one
slow node driven by them: the slow node never holds the tail."""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

import pytest

from analysis.queue import (
    Candidate,
    batch_target_s,
    pick_batch,
    segment_goal_s,
    segment_size,
    steal_share,
)


def test_the_divisor_grows_as_the_queue_drains() -> None:
    full = batch_target_s(100.0, 2, total_s=100.0)
    assert full == pytest.approx(100.0 / (2 * 2))  # a full queue: pending / (2 x nodes)
    late = batch_target_s(10.0, 2, total_s=100.0)
    assert late < 10.0 / (2 * 2)  # drained: smaller than the fixed divisor would give
    assert late == pytest.approx(10.0 / (3.8 * 2))
    assert batch_target_s(10.0, 2) == pytest.approx(10.0 / 4)  # no total: the start divisor


def test_the_floor_is_the_per_batch_cost_amortised() -> None:
    assert batch_target_s(1.0, 4, total_s=100.0, min_batch_s=0.6) == 0.6
    assert batch_target_s(0.0, 4, total_s=100.0) == 0.0


def test_a_segment_is_half_a_claim_now_at_least_the_floor_and_one_item() -> None:
    assert segment_goal_s(100.0, 2, total_s=100.0) == pytest.approx(100.0 / (2 * 2) / 2)
    assert segment_goal_s(10.0, 2, total_s=100.0) < segment_goal_s(50.0, 2, total_s=100.0)
    assert segment_goal_s(1.0, 2, total_s=100.0, min_segment_s=0.4) == 0.4
    assert segment_size([1.0, 1.0, 1.0, 1.0], goal_s=2.0) == 2
    assert segment_size([5.0, 1.0, 1.0, 1.0], goal_s=2.0) == 1  # a heavy head alone
    assert segment_size([0.1] * 10, goal_s=0.8) == 8
    assert segment_size([0.1] * 10, goal_s=5.0) == 10
    assert segment_size([0.0], goal_s=1.0) == 1
    assert segment_size([], goal_s=1.0) == 0


def test_a_take_over_is_the_back_half_of_what_the_sibling_has_not_started() -> None:
    unstarted = [Candidate(p, 1.0) for p in (7, 3, 5, 9)]
    assert steal_share(unstarted) == (7, 9)  # the back, in queue order
    assert steal_share([Candidate(4, 30.0)]) == (4,)  # one item left: the idle node runs it
    assert steal_share([Candidate(1, 1.0), Candidate(2, 30.0)]) == (2,)
    assert steal_share([Candidate(1, 30.0), Candidate(2, 1.0)]) == (2,)
    assert steal_share([]) == ()


@dataclass
class SimNode:
    """One node of the simulated pipeline."""

    name: int
    speed: float
    unstarted: list[tuple[int, float]] = field(default_factory=list)  # (position, seconds)
    last_end: float = 0.0
    ran: list[int] = field(default_factory=list)


def simulate(
    seconds: list[float], speeds: list[float], *, round_trip_s: float, steal: bool = True
) -> tuple[float, float, list[int]]:
    """Nodes pull `seconds` (queue order, predictions exact) with the server's rules: claim a
    batch, start it segment by segment, take over a sibling's unstarted back half when nothing
    is pending. Every call costs `round_trip_s`. The pipeline wait, the idle tail (first node
    done to last) and every position run."""
    floor = 20 * round_trip_s
    pending = list(enumerate(seconds))
    total = sum(seconds)
    nodes = [SimNode(i, s) for i, s in enumerate(speeds)]
    events = [(0.0, n.name) for n in nodes]
    while events:
        now, name = heapq.heappop(events)
        node = nodes[name]
        now += round_trip_s
        if not node.unstarted:
            if pending:
                target = batch_target_s(
                    sum(s for _, s in pending), len(nodes), total_s=total, min_batch_s=floor
                )
                pick = pick_batch([Candidate(p, s) for p, s in pending], target_s=target)
                node.unstarted = [(p, s) for p, s in pending if p in pick.positions]
                pending = [(p, s) for p, s in pending if p not in pick.positions]
            elif steal:
                victim = max(nodes, key=lambda n: sum(s for _, s in n.unstarted))
                taken = steal_share([Candidate(p, s) for p, s in victim.unstarted])
                node.unstarted = [(p, s) for p, s in victim.unstarted if p in taken]
                victim.unstarted = [(p, s) for p, s in victim.unstarted if p not in taken]
        if not node.unstarted:
            continue  # done: nothing pending, nothing to take over
        open_s = sum(s for _, s in pending) + sum(s for n in nodes for _, s in n.unstarted)
        goal = segment_goal_s(open_s, len(nodes), total_s=total, min_segment_s=floor)
        count = segment_size([s for _, s in node.unstarted], goal_s=goal)
        segment, node.unstarted = node.unstarted[:count], node.unstarted[count:]
        node.ran += [p for p, _ in segment]
        node.last_end = now + sum(s for _, s in segment) / node.speed
        heapq.heappush(events, (node.last_end, name))
    ends = [n.last_end for n in nodes]
    return max(ends), max(ends) - min(ends), sorted(p for n in nodes for p in n.ran)


def suite(seed: int) -> list[float]:
    """A suite of 400 items heaviest first, 120 s in all, a few heavy ones at the head."""
    rng = random.Random(seed)
    seconds = sorted((rng.lognormvariate(-2.5, 1.2) for _ in range(400)), reverse=True)
    scale = 120.0 / sum(seconds)
    return [s * scale for s in seconds]


@pytest.mark.parametrize("slowdown", [2.0, 4.0])
def test_a_slow_node_does_not_hold_the_tail(slowdown: float) -> None:
    for seed in range(5):
        seconds = suite(seed)
        wait, tail, ran = simulate(seconds, [1.0 / slowdown, 1.0], round_trip_s=0.02)
        assert ran == list(range(len(seconds)))  # each item exactly once
        static = (sum(seconds) / 2) * slowdown  # the slow node's half at its speed
        ideal = sum(seconds) / (1.0 + 1.0 / slowdown)
        assert wait <= 0.8 * static
        assert wait <= 1.05 * ideal + 1.0
        assert tail <= 0.05 * wait


def test_without_take_over_a_very_slow_node_holds_the_tail() -> None:
    """Why the take-over exists: sizing alone leaves a node 4x slower holding its last batch."""
    seconds = suite(0)
    _, tail_alone, _ = simulate(seconds, [0.25, 1.0], round_trip_s=0.02, steal=False)
    _, tail, _ = simulate(seconds, [0.25, 1.0], round_trip_s=0.02)
    assert tail < tail_alone / 2


def test_the_node_floors_keep_its_calls_a_small_share_of_the_work() -> None:
    from laptime_ci.queue_node import MAX_FLOOR_S, QUEUE_SHARE, queue_floors

    assert queue_floors(None) == (0.0, 0.0)  # not measured yet
    batch, segment = queue_floors(0.02)
    assert segment == pytest.approx(0.02 / QUEUE_SHARE)  # one start per segment
    assert batch == pytest.approx(2 * 0.02 / QUEUE_SHARE)  # a claim and a finish per batch
    assert queue_floors(5.0) == (MAX_FLOOR_S, MAX_FLOOR_S)  # a slow server: bounded tail
