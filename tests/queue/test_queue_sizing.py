"""Batch sizing, segments, take-over, probes and pace limits as pure functions, and a simulated
pipeline with one slow node driven by them: the slow node never holds the tail, nor the
heaviest item."""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

import pytest

from analysis.queue import (
    PROBE_S,
    Candidate,
    batch_target_s,
    needs_probe,
    pace_limit_s,
    pick_batch,
    segment_goal_s,
    segment_size,
    steal_share,
    wait_retry_s,
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

    def pace(self) -> float | None:
        """Measured / predicted seconds, once it has run something (predictions are exact)."""
        return 1.0 / self.speed if self.ran else None


def simulate(
    seconds: list[float],
    speeds: list[float],
    *,
    round_trip_s: float,
    steal: bool = True,
    paced: bool = True,
) -> tuple[float, float, list[int]]:
    """Nodes pull `seconds` (queue order, predictions exact) with the server's rules: claim a
    batch (a probe first where an item is heavy; `paced`: a slow node passes what it would
    finish last), start it segment by segment, take over a sibling's unstarted back half when
    nothing is pending. Every call costs `round_trip_s`; node 0 claims first. The pipeline
    wait, the idle tail (first node done to last) and every position run."""
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
            open_s = sum(s for _, s in pending) + sum(s for n in nodes for _, s in n.unstarted)
            siblings = [p for n in nodes if n is not node and (p := n.pace()) is not None]
            limit = float("inf")
            if paced:
                limit = pace_limit_s(node.pace(), siblings, open_s=open_s, nodes=len(nodes))
            if pending:
                heaviest = max(s for _, s in pending)
                probe = paced and needs_probe(
                    heaviest, open_s, len(nodes), claimed_before=bool(node.ran)
                )
                target = batch_target_s(
                    sum(s for _, s in pending), len(nodes), total_s=total, min_batch_s=floor
                )
                pick = pick_batch(
                    [Candidate(p, s) for p, s in pending],
                    target_s=max(PROBE_S, floor) if probe else target,
                    max_item_s=limit,
                    from_back=probe,
                )
                if not pick.positions and pick.passed:
                    heapq.heappush(events, (now + 0.2, name))  # left for a faster sibling
                    continue
                node.unstarted = [(p, s) for p, s in pending if p in pick.positions]
                pending = [(p, s) for p, s in pending if p not in pick.positions]
            elif steal:
                victim = max(nodes, key=lambda n: sum(s for _, s in n.unstarted))
                taken = steal_share([Candidate(p, s) for p, s in victim.unstarted if s <= limit])
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


def test_a_probe_is_asked_only_of_a_first_claim_where_one_item_is_heavy() -> None:
    assert needs_probe(30.0, 160.0, 4, claimed_before=False)  # 30 s of a 40 s share
    assert not needs_probe(30.0, 160.0, 4, claimed_before=True)
    assert not needs_probe(5.0, 160.0, 4, claimed_before=False)  # no item worth a probe
    assert not needs_probe(30.0, 160.0, 1, claimed_before=False)  # no sibling to leave it to
    probe = pick_batch([Candidate(p, s) for p, s in enumerate([30, 5, 1, 0.5, 0.4])],
                       target_s=1.5, from_back=True)  # fmt: skip
    assert probe.positions == (3, 4)  # the lightest, up to the probe's seconds
    assert probe.predicted_each == (0.5, 0.4)


def test_a_slow_node_passes_what_it_would_finish_after_the_projected_end() -> None:
    # 160 s open, one node at half speed, three at full: the queue ends in about 160 / 3.5 s.
    limit = pace_limit_s(2.0, [1.0, 1.0, 1.0], open_s=160.0, nodes=4)
    assert limit == pytest.approx(160.0 / 3.5 / 2.0)
    pick = pick_batch([Candidate(0, 30.0), Candidate(1, 10.0), Candidate(2, 8.0)],
                      target_s=15.0, max_item_s=limit)  # fmt: skip
    assert pick.positions == (1,)
    assert pick.passed == (0,)
    # Equal paces, or nobody measured beside it: no limit.
    assert pace_limit_s(1.1, [1.0, 1.0], open_s=160.0, nodes=3) == float("inf")
    assert pace_limit_s(2.0, [], open_s=160.0, nodes=3) == float("inf")
    assert pace_limit_s(None, [1.0], open_s=160.0, nodes=2) == float("inf")
    # An unmeasured sibling counts at the median pace of those measured.
    assert pace_limit_s(2.0, [1.0], open_s=100.0, nodes=3) == pytest.approx(
        100.0 / (0.5 + 1.0 + 1.0 / 2.0) / 2.0
    )


def heavy_head(seed: int) -> list[float]:
    """166 s of work whose head is one 38 s item: 0.92 of a node's share with four nodes (a
    single test nobody can cut, as numpy's Fraction percentile test in a waiting suite)."""
    return [38.0] + [s * 128.0 / 120.0 for s in suite(seed)]


@pytest.mark.parametrize("nodes", [2, 3, 4])
def test_the_heaviest_item_goes_to_a_node_whose_pace_is_known(nodes: int) -> None:
    for seed in range(3):
        seconds = heavy_head(seed)
        speeds = [0.5] + [1.0] * (nodes - 1)  # the slow node claims first
        wait, _, ran = simulate(seconds, speeds, round_trip_s=0.02)
        assert ran == list(range(len(seconds)))
        ideal = max(sum(seconds) / (nodes - 0.5), 38.0)
        assert wait <= 1.1 * ideal + 1.0
        blind, _, _ = simulate(seconds, speeds, round_trip_s=0.02, paced=False)
        assert blind >= 2 * 38.0  # without it, the slow node holds the 38 s item at half speed
        # Equal nodes pay only the probe.
        even, _, _ = simulate(seconds, [1.0] * nodes, round_trip_s=0.02)
        unpaced, _, _ = simulate(seconds, [1.0] * nodes, round_trip_s=0.02, paced=False)
        assert even <= unpaced + PROBE_S + 1.0


def test_a_waiting_node_asks_again_as_its_siblings_near_their_end() -> None:
    assert wait_retry_s(100.0, 30.0, 2) == 2.0  # far from the end: the old 2 s
    assert wait_retry_s(100.0, 1.0, 2) == pytest.approx(0.5)  # half of what is left
    assert wait_retry_s(100.0, -3.0, 2) == 0.2  # overdue: soon, not at once
    assert wait_retry_s(0.5, 30.0, 2) == pytest.approx(0.5)  # never after a lease ends
    assert wait_retry_s(100.0, None, 2) == 2.0  # nothing predicted: as before
    # 1,000 waiting nodes poll no faster than every 2 s (the server's claim rate).
    assert wait_retry_s(100.0, 0.0, 1000) == 2.0
    assert wait_retry_s(100.0, 0.0, 50) == pytest.approx(1.0)


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
