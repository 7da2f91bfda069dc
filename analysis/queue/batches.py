"""How much a node's next claim takes, what it starts at once, what an idle node takes over,
and what fits a node's remaining budget.

Batches shrink as the queue empties (guided self-scheduling: a claim takes the pending work
over k x nodes, k growing from SHRINK_START to SHRINK_END as the queue drains), never below
the node's floor (its per-batch cost amortised), so early claims are cheap to hand out and the
last ones are small enough that the nodes finish together. A node starts a batch in segments
(half of what a claim would take now, at least its floor); an idle node may take over the back
half of what a sibling has not started, so a slow node never holds the tail. Where one item
is a large share of a node's work, a node's first claim is a probe (the queue's lightest items)
and a node measured markedly slower than a live sibling leaves to the faster ones the items it
would finish after the queue's projected end: an item no sibling may take over once begun
must not start on the slowest node. A budget
is checked before committing to an item: an item is taken only when its prediction, widened
by the prediction's stated error, fits what the node has left (the AlgoPerf lesson: check
before the next piece of work, not after).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# A claim takes about 1/(k x nodes) of what is pending, k from SHRINK_START (queue full) to
# SHRINK_END (queue drained): the first claims stay cheap, the last ones small.
SHRINK_START = 2.0
SHRINK_END = 4.0
# A node's speed is unknown before it has run anything, and heaviest first hands the heaviest
# items to the first claims. When the heaviest pending item is at least PROBE_WHEN of a node's
# fair share, a node's first claim is a probe: the queue's lightest items, about PROBE_S (at
# least the node's floor). The first node through its probe is the fastest, and takes the
# heaviest item.
PROBE_WHEN = 0.25
PROBE_S = 2.0
# A node this many times slower than its fastest live sibling leaves to the faster ones every
# item it would finish after the queue's projected end. Paces measured on a probe carry the
# process's first uses: at 1.25, four equal nodes on two cores (paces 1.5-2.1) passed the
# second-heaviest item among themselves until it started last.
SLOWER_THAN = 1.5


@dataclass(frozen=True)
class Candidate:
    """A pending item as the claim sees it."""

    position: int
    predicted_s: float


@dataclass(frozen=True)
class BatchPick:
    """The positions taken, and whether pending work was left because it could not fit."""

    positions: tuple[int, ...]
    predicted_s: float
    # Items predicted not to fit the budget even alone (every one when nothing was taken).
    unfit: tuple[int, ...]
    predicted_each: tuple[float, ...] = ()  # of `positions`, in order
    # Items left for faster siblings (heavier than the node's pace limit).
    passed: tuple[int, ...] = ()


def batch_target_s(
    pending_s: float, nodes: int, *, total_s: float | None = None, min_batch_s: float = 0.0
) -> float:
    """Seconds of work the next claim aims at: pending / (k x nodes), k growing from
    SHRINK_START to SHRINK_END as the queue of `total_s` drains; at least `min_batch_s`
    (the node's per-batch cost amortised)."""
    drained = 0.0
    if total_s is not None and total_s > 0:
        drained = min(max(1.0 - pending_s / total_s, 0.0), 1.0)
    shrink = SHRINK_START + (SHRINK_END - SHRINK_START) * drained
    return max(pending_s / (shrink * max(nodes, 1)), min_batch_s, 0.0)


def segment_size(unstarted_s: Sequence[float], *, goal_s: float) -> int:
    """How many of a batch's unstarted items (in order) the node starts now: items up to
    `goal_s` (see segment_goal_s), at least one. What it has not started stays free for an idle
    sibling to take over."""
    total = 0.0
    for count, seconds in enumerate(unstarted_s, start=1):
        total += seconds
        if total >= goal_s - 1e-9:  # float sums of equal parts land just short
            return count
    return len(unstarted_s)


def segment_goal_s(
    open_s: float, nodes: int, *, total_s: float | None = None, min_segment_s: float = 0.0
) -> float:
    """Seconds a node starts at once: half of what a claim would take now, where `open_s` is
    the work nobody has started (pending or claimed but not begun). It shrinks with the queue,
    so a node K times slower than its siblings commits at most about 1/(2 x SHRINK x nodes) of
    what is left, and the others finish the rest meanwhile."""
    return max(batch_target_s(open_s, nodes, total_s=total_s) / 2.0, min_segment_s)


def steal_share(unstarted: Sequence[Candidate]) -> tuple[int, ...]:
    """What an idle node takes over from a sibling's batch: the back of the items the sibling
    has not started (in queue order), about half of their predicted seconds, at least one item;
    the sibling keeps the front, which it reaches first."""
    ordered = sorted(unstarted, key=lambda c: c.position)
    half = sum(c.predicted_s for c in ordered) / 2.0
    taken: list[int] = []
    total = 0.0
    for candidate in reversed(ordered):
        if taken and total + candidate.predicted_s > half:
            break
        taken.append(candidate.position)
        total += candidate.predicted_s
    return tuple(sorted(taken))


def needs_probe(heaviest_s: float, open_s: float, nodes: int, *, claimed_before: bool) -> bool:
    """True when a node's first claim should be a probe: it has claimed nothing in this queue,
    it has siblings, and the heaviest pending item is at least PROBE_WHEN of a node's share
    of the work nobody has started."""
    if claimed_before or nodes < 2 or open_s <= 0:
        return False
    return heaviest_s >= PROBE_WHEN * open_s / nodes


def pace_limit_s(
    pace: float | None, sibling_paces: Sequence[float], *, open_s: float, nodes: int
) -> float:
    """The heaviest item (predicted seconds) a node at `pace` (its measured / predicted
    seconds; None: not measured) should begin: with a live sibling SLOWER_THAN times faster,
    only what it would finish by the queue's projected end (`open_s` shared by all `nodes` at
    their paces, an unmeasured one at the median); otherwise no limit."""
    live = [p for p in sibling_paces if p > 0]
    if pace is None or pace <= 0 or not live or pace <= SLOWER_THAN * min(live):
        return float("inf")
    known = sorted([pace, *live])
    typical = known[len(known) // 2]
    speed = sum(1.0 / p for p in known) + max(nodes - len(known), 0) / typical
    return open_s / speed / pace


# A node with nothing to take while siblings hold claims asks again after at least
# WAIT_MIN_S, at most WAIT_MAX_S, and at least WAIT_PER_NODE_S per planned node: the waiting
# nodes of a large queue together stay near the claim rate one server sustains (50-70/s).
WAIT_MIN_S = 0.2
WAIT_MAX_S = 2.0
WAIT_PER_NODE_S = 0.02


def wait_retry_s(lease_left_s: float, predicted_left_s: float | None, nodes: int) -> float:
    """When a waiting node should ask again: half the time its siblings' open claims are
    predicted to need still (so the polls close in on their end: a fixed 2 s added up to
    2 s to every pipeline's wait), never after the soonest lease ends, within the bounds."""
    floor = min(WAIT_MAX_S, max(WAIT_MIN_S, nodes * WAIT_PER_NODE_S))
    soon = min(lease_left_s, WAIT_MAX_S)
    if predicted_left_s is not None:
        soon = min(soon, max(predicted_left_s, 0.0) / 2.0)
    return max(floor, soon)


def fits_budget(predicted_s: float, remaining_s: float | None, error: float) -> bool:
    """True when `predicted_s`, widened by the relative `error`, fits in `remaining_s`
    (None: no budget)."""
    if remaining_s is None:
        return True
    return predicted_s * (1.0 + max(error, 0.0)) <= remaining_s


def pick_batch(
    candidates: Sequence[Candidate],
    *,
    target_s: float,
    remaining_s: float | None = None,
    error: float = 0.0,
    max_item_s: float = float("inf"),
    from_back: bool = False,
) -> BatchPick:
    """Take pending items in queue order (`from_back`: lightest first, a probe) until
    `target_s` is reached (at least one item when any fits), skipping every item whose
    prediction would not fit the budget left after the items already taken, and passing
    every item heavier than `max_item_s` (see pace_limit_s) to the node's siblings."""
    taken: list[Candidate] = []
    unfit: list[int] = []
    passed: list[int] = []
    total = 0.0
    for candidate in sorted(candidates, key=lambda c: c.position, reverse=from_back):
        if not fits_budget(candidate.predicted_s, remaining_s, error):
            unfit.append(candidate.position)
            continue
        if candidate.predicted_s > max_item_s:
            passed.append(candidate.position)
            continue
        if taken and total + candidate.predicted_s > target_s:
            break
        if not fits_budget(total + candidate.predicted_s, remaining_s, error):
            continue  # fits alone, not after what is taken: left for a later claim
        taken.append(candidate)
        total += candidate.predicted_s
    taken.sort(key=lambda c: c.position)
    return BatchPick(
        tuple(c.position for c in taken),
        total,
        tuple(unfit),
        tuple(c.predicted_s for c in taken),
        tuple(passed),
    )
