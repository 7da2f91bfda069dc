"""What a queue did: each node's batches, tests run twice or nowhere, budget stops and the idle
tail (first node done to last node done). Times are seconds since the queue opened."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class ClaimRow:
    """One batch handed to a node."""

    claim_id: int
    node: str
    attempt: int
    state: str  # open | finished | expired | released
    claimed_s: float
    started_s: float | None
    finished_s: float | None
    predicted_s: float
    items: int
    tests: int
    replay: bool = False


@dataclass(frozen=True)
class ResultRow:
    """One test's measured run on a node."""

    nodeid: str
    node: str
    attempt: int
    claim_id: int
    duration_s: float


@dataclass(frozen=True)
class StopRow:
    """A node that stopped because nothing pending fit its budget."""

    node: str
    attempt: int
    at_s: float
    remaining_s: float | None
    not_run: tuple[str, ...]  # the items that did not fit


@dataclass(frozen=True)
class NodeRun:
    """One node's batches in claim order, and when its last one finished."""

    node: str
    finish_s: float | None
    batches: tuple[ClaimRow, ...]


@dataclass(frozen=True)
class RanTwice:
    """A test run more than once, and where: "node@attempt" of each run."""

    nodeid: str
    runs: tuple[str, ...]


@dataclass(frozen=True)
class QueueReport:
    """The answer of a queue's status; seconds kept to the millisecond."""

    tests: int
    pending_items: int
    open_claims: int
    done: bool  # nothing pending, nothing claimed
    wait_s: float | None
    idle_tail_s: float | None
    nodes: tuple[NodeRun, ...]  # by node name
    budget_stops: tuple[StopRow, ...]
    ran_twice: tuple[RanTwice, ...]  # by nodeid
    rerun_by_retry: int  # of ran_twice: run again by a retried job (replay, by design)
    never_ran: tuple[str, ...]


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _ms(value: float) -> float:
    return round(value, 3)


def _claim_ms(claim: ClaimRow) -> ClaimRow:
    return replace(
        claim,
        claimed_s=_ms(claim.claimed_s),
        started_s=_round(claim.started_s),
        finished_s=_round(claim.finished_s),
        predicted_s=_ms(claim.predicted_s),
    )


def queue_report(
    nodeids: Sequence[str],
    claims: Sequence[ClaimRow],
    results: Sequence[ResultRow],
    *,
    pending_items: int,
    stops: Sequence[StopRow] = (),
) -> QueueReport:
    """The report of a queue of `nodeids` from its claims and measured results."""
    by_node: dict[str, list[ClaimRow]] = defaultdict(list)
    for claim in sorted(claims, key=lambda c: (c.claimed_s, c.claim_id)):
        by_node[claim.node].append(claim)
    runs: dict[str, list[str]] = defaultdict(list)
    attempts: dict[str, set[tuple[str, int]]] = defaultdict(set)
    for result in results:
        runs[result.nodeid].append(f"{result.node}@{result.attempt}")
        attempts[result.nodeid].add((result.node, result.attempt))
    twice = {n: sorted(r) for n, r in runs.items() if len(r) > 1}
    # Run again by the same node in a later attempt only: the retried job's replay.
    by_retry = sum(
        1 for n in twice if len({node for node, _ in attempts[n]}) == 1 and len(attempts[n]) > 1
    )
    counts = Counter(runs)
    never = tuple(sorted(n for n in set(nodeids) if counts[n] == 0))
    open_claims = sum(1 for c in claims if c.state == "open")
    finish: dict[str, float] = {}
    for node, rows in by_node.items():
        ends = [c.finished_s for c in rows if c.finished_s is not None]
        if ends:
            finish[node] = max(ends)
    done = pending_items == 0 and open_claims == 0
    wait = max(finish.values()) if finish else None
    tail = max(finish.values()) - min(finish.values()) if finish else None
    return QueueReport(
        tests=len(set(nodeids)),
        pending_items=pending_items,
        open_claims=open_claims,
        done=done,
        wait_s=_round(wait),
        idle_tail_s=_round(tail),
        nodes=tuple(
            NodeRun(node, _round(finish.get(node)), tuple(_claim_ms(c) for c in rows))
            for node, rows in sorted(by_node.items())
        ),
        budget_stops=tuple(
            replace(s, at_s=_ms(s.at_s), remaining_s=_round(s.remaining_s)) for s in stops
        ),
        ran_twice=tuple(RanTwice(n, tuple(r)) for n, r in sorted(twice.items())),
        rerun_by_retry=by_retry,
        never_ran=never,
    )
