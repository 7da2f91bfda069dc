"""How much a node's next claim takes, and what fits its remaining budget.

Batches shrink as the queue empties (guided self-scheduling: a claim takes about the pending
work over `SHRINK` x nodes), so early claims are cheap to hand out and the last ones are small
enough that the nodes finish together. A budget is checked before committing to an item:
an item is taken only when its prediction, widened by the prediction's stated error, fits what
the node has left (the AlgoPerf lesson: check before the next piece of work, not after).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# A claim takes about 1/(SHRINK x nodes) of what is pending.
SHRINK = 2.0


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


def batch_target_s(pending_s: float, nodes: int, *, min_batch_s: float = 0.0) -> float:
    """Seconds of work the next claim aims at: pending / (SHRINK x nodes), at least
    `min_batch_s` (a runner's process start amortised over enough work)."""
    return max(pending_s / (SHRINK * max(nodes, 1)), min_batch_s, 0.0)


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
) -> BatchPick:
    """Take pending items in queue order until `target_s` is reached (at least one item when
    any fits), skipping every item whose prediction would not fit the budget left after the
    items already taken."""
    taken: list[int] = []
    unfit: list[int] = []
    total = 0.0
    for candidate in sorted(candidates, key=lambda c: c.position):
        if not fits_budget(candidate.predicted_s, remaining_s, error):
            unfit.append(candidate.position)
            continue
        if taken and total + candidate.predicted_s > target_s:
            break
        if not fits_budget(total + candidate.predicted_s, remaining_s, error):
            continue  # fits alone, not after what is taken: left for a later claim
        taken.append(candidate.position)
        total += candidate.predicted_s
    return BatchPick(tuple(taken), total, tuple(unfit))
