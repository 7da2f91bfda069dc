"""What queue mode's services answer: typed objects the API (app/schemas/queues.py), the
`laptime queue` command and the queue page all take; each wire model is checked against its
object by tests/server/test_watch_schema_drift.py."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from analysis.ci.runner_commands import JobSelection
from analysis.queue.report import QueueReport

ClaimState = Literal["batch", "budget", "wait", "done"]


@dataclass(frozen=True)
class QueuedItem:
    """A work item as a node gets it: a file, `file::Class`, a function or a test."""

    position: int
    name: str
    nodeids: tuple[str, ...]
    predicted_s: float  # to the millisecond
    estimated: tuple[str, ...]  # its nodeids without history, placed by estimate


@dataclass(frozen=True)
class QueueJoin:
    """The queue a node opened or joined."""

    queue_id: int
    pipeline: str
    opened: bool  # true for the node that created it
    attempt: int  # the attempt that opened it
    runner: str
    nodes: int
    tests: int
    error: float  # relative error of the predictions: the budget's margin
    replay_items: int  # items a retried job replays (what it ran before)
    estimated: tuple[str, ...]
    plan_id: str  # the queue as a plan of its nodes: each node's upload names it


@dataclass(frozen=True)
class BatchClaim:
    """The next batch, or why there is none. `replay` is said of a batch only, `not_fit` of
    a budget stop only (None elsewhere: the answer leaves them out)."""

    queue_id: int
    state: ClaimState
    claim_id: int | None
    items: tuple[QueuedItem, ...]
    predicted_s: float
    pending_items: int
    error: float
    lease_s: float
    retry_after_s: float | None
    selection: JobSelection | None  # the batch in its runner's words (None: pytest)
    replay: bool | None = None
    not_fit: tuple[QueuedItem, ...] | None = None
    started: tuple[int, ...] = ()  # positions begun now (all, or the first segment)
    taken_over_from: str | None = None  # the sibling whose unbegun items this batch took


@dataclass(frozen=True)
class LeaseExtended:
    """Claims whose lease a heartbeat extended."""

    claims: int
    lease_s: float


@dataclass(frozen=True)
class BatchStarted:
    """A claim after start."""

    claim_id: int
    state: str
    started: tuple[int, ...]  # positions begun now; a sibling took over the rest
    unstarted: int  # items of the claim still not begun


@dataclass(frozen=True)
class BatchFinished:
    """What a finish recorded."""

    claim_id: int
    recorded: int
    late: bool  # the lease had run out: its items may run twice
    handed_back: int  # items not fully run, back in the queue


@dataclass(frozen=True)
class ClaimsReleased:
    """What a release handed back and what is left pending."""

    released: int
    pending: tuple[QueuedItem, ...]


@dataclass(frozen=True)
class QueueListing:
    """A queue in the project's list."""

    queue_id: int
    pipeline: str
    attempt: int
    nodes: int
    runner: str
    opened_at: datetime


@dataclass(frozen=True)
class QueueState:
    """A queue and the report of what it did."""

    queue_id: int
    pipeline: str
    attempt: int
    runner: str
    planned_nodes: int
    error: float
    opened_at: datetime
    report: QueueReport
