"""Queue mode's requests and answers (docs/api.md#queue-mode)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.schemas.base import ApiModel
from app.services.queue_answers import (
    BatchClaim,
    BatchFinished,
    BatchStarted,
    ClaimsReleased,
    LeaseExtended,
    QueuedItem,
    QueueJoin,
    QueueListing,
    QueueState,
)

# Most nodeids one queue holds (a big monorepo collects ~100k tests).
MAX_COLLECTED = 200_000
Name = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]
Nodeid = Annotated[str, StringConstraints(min_length=1, max_length=4096, pattern=r"^[^\x00]*$")]
Attempt = Annotated[int, Field(ge=1, le=10_000)]
LeaseS = Annotated[float, Field(ge=1.0, le=3600.0)]


class _Request(BaseModel):
    # Strict: `false` is not a number of seconds (the schema says so, and so do we).
    model_config = ConfigDict(extra="forbid", strict=True)


class NodeRequest(_Request):
    """Who asks: the node (job index or name) and its CI attempt."""

    node: Name
    attempt: Attempt = 1


class OpenQueueRequest(NodeRequest):
    """A node's collected tests: the first node opens the pipeline's queue, the rest join."""

    pipeline: Name
    collected: list[Nodeid] = Field(max_length=MAX_COLLECTED)
    nodes: Annotated[int, Field(ge=1, le=1000)] = 1
    runner: Annotated[str, StringConstraints(max_length=40, pattern=r"^[a-z0-9_-]*$")] = "pytest"
    budget_s: Annotated[float, Field(gt=0.0, le=1e7)] | None = Field(
        default=None, description="the nodes' wall budget: no item is cut heavier than it"
    )


class ClaimRequest(NodeRequest):
    """The node's remaining budget (null: none) and its per-batch floor."""

    remaining_s: Annotated[float, Field(ge=0.0, le=1e7)] | None = None
    min_batch_s: Annotated[float, Field(ge=0.0, le=86_400.0)] = 0.0
    lease_s: LeaseS = 120.0
    segmented: bool = Field(
        default=False,
        description="begin only the first segment now and the rest segment by segment "
        "(POST .../start with segment); what is not begun an idle sibling may take over",
    )
    min_segment_s: Annotated[float, Field(ge=0.0, le=86_400.0)] = 0.0
    paced: bool = Field(
        default=False,
        description="this node sends its pace with its claims: where one item is a large "
        "share of a node's work, its first claim is a probe (the queue's lightest items) so "
        "that the heaviest go to nodes whose pace is known",
    )
    pace: Annotated[float, Field(gt=0.0, le=1000.0)] | None = Field(
        default=None,
        description="this node's measured / predicted seconds so far (null: not measured): "
        "a node markedly slower than a live sibling is not handed the items it would finish "
        "after the queue's projected end",
    )


class StartRequest(_Request):
    """What to begin: the claim's next segment, or (default) all it has not begun."""

    segment: bool = False
    min_segment_s: Annotated[float, Field(ge=0.0, le=86_400.0)] = 0.0


class HeartbeatRequest(NodeRequest):
    """Keep the node's claims leased."""

    lease_s: LeaseS = 120.0


class TestResult(_Request):
    """One test's measured run."""

    nodeid: Nodeid
    duration_s: Annotated[float, Field(ge=0.0, le=1e7)] | None = None
    outcome: Annotated[str, StringConstraints(max_length=40)] | None = None


class FinishRequest(_Request):
    """The batch's measured results."""

    results: list[TestResult] = Field(default_factory=list, max_length=MAX_COLLECTED)


class ReleaseRequest(NodeRequest):
    """Hand the node's open claims back."""

    reason: Annotated[str, StringConstraints(max_length=200, pattern=r"^[^\x00]*$")] = "stop"


class QueueItem(ApiModel):
    """A work item: a file, `file::Class`, a function or a test."""

    position: int
    name: str
    nodeids: list[str]
    predicted_s: float
    estimated: list[str] = Field(description="its nodeids without history, placed by estimate")

    @classmethod
    def of(cls, item: QueuedItem) -> QueueItem:
        """The wire form of a queued item."""
        return cls.model_validate(item, from_attributes=True)


class QueueOpened(ApiModel):
    """The queue a node opened or joined."""

    queue_id: int
    pipeline: str
    opened: bool = Field(description="true for the node that created it")
    attempt: int = Field(description="the attempt that opened it")
    runner: str
    nodes: int
    tests: int
    error: float = Field(description="relative error of the predictions: the budget's margin")
    replay_items: int = Field(description="items a retried job replays (what it ran before)")
    estimated: list[str]
    plan_id: str = Field(
        description="the queue as a plan of its nodes: a node's upload names it (with its"
        " `shard=I/N` label) so the node is compared with its share in the accuracy view"
    )

    @classmethod
    def of(cls, joined: QueueJoin) -> QueueOpened:
        """The wire form of an open or join."""
        return cls.model_validate(joined, from_attributes=True)


class QueueSelection(ApiModel):
    """A batch in its runner's words: the arguments, and a full shell command."""

    runner: str
    args: list[str]
    command: str = Field(description='"" when laptime knows no command for the runner')


class QueueClaim(ApiModel):
    """The next batch, or why there is none."""

    queue_id: int
    state: Literal["batch", "budget", "wait", "done"]
    claim_id: int | None
    replay: bool = False
    items: list[QueueItem]
    predicted_s: float
    pending_items: int
    error: float
    lease_s: float
    retry_after_s: float | None
    selection: QueueSelection | None = Field(description="the batch in its runner's words")
    not_fit: list[QueueItem] = Field(default_factory=list)
    started: list[int] = Field(
        default_factory=list, description="positions begun now (all, or the first segment)"
    )
    taken_over_from: str | None = Field(
        default=None, description="the sibling node whose unbegun items this batch took over"
    )

    @classmethod
    def of(cls, claim: BatchClaim) -> QueueClaim:
        """The wire form of a claim: `replay` said of a batch, `not_fit` of a budget stop."""
        said: dict[str, object] = {}
        if claim.replay is not None:
            said["replay"] = claim.replay
        if claim.not_fit is not None:
            said["not_fit"] = [QueueItem.of(i) for i in claim.not_fit]
        selection = claim.selection
        return cls(
            queue_id=claim.queue_id,
            state=claim.state,
            claim_id=claim.claim_id,
            items=[QueueItem.of(i) for i in claim.items],
            predicted_s=claim.predicted_s,
            pending_items=claim.pending_items,
            error=claim.error,
            lease_s=claim.lease_s,
            retry_after_s=claim.retry_after_s,
            started=list(claim.started),
            taken_over_from=claim.taken_over_from,
            selection=None
            if selection is None
            else QueueSelection.model_validate(selection, from_attributes=True),
            **said,  # type: ignore[arg-type]
        )


class QueueHeartbeat(ApiModel):
    """Claims whose lease was extended."""

    claims: int
    lease_s: float

    @classmethod
    def of(cls, extended: LeaseExtended) -> QueueHeartbeat:
        """The wire form of a heartbeat."""
        return cls.model_validate(extended, from_attributes=True)


class QueueBatchStarted(ApiModel):
    """A claim after start."""

    claim_id: int
    state: str
    started: list[int] = Field(description="positions begun now; a sibling took over the rest")
    unstarted: int = Field(description="items of the claim still not begun")

    @classmethod
    def of(cls, started: BatchStarted) -> QueueBatchStarted:
        """The wire form of a start."""
        return cls.model_validate(started, from_attributes=True)


class QueueFinished(ApiModel):
    """What a finish recorded."""

    claim_id: int
    recorded: int
    late: bool = Field(description="the lease had run out: its items may run twice")
    handed_back: int = Field(description="items not fully run, back in the queue")

    @classmethod
    def of(cls, finished: BatchFinished) -> QueueFinished:
        """The wire form of a finish."""
        return cls.model_validate(finished, from_attributes=True)


class QueueReleased(ApiModel):
    """What a release handed back and what is left."""

    released: int
    pending: list[QueueItem]

    @classmethod
    def of(cls, released: ClaimsReleased) -> QueueReleased:
        """The wire form of a release."""
        return cls.model_validate(released, from_attributes=True)


class QueueSummary(ApiModel):
    """A queue in a list."""

    queue_id: int
    pipeline: str
    attempt: int
    nodes: int
    runner: str
    opened_at: str

    @classmethod
    def of(cls, listed: QueueListing) -> QueueSummary:
        """The wire form of a listed queue (its opening time in ISO 8601, as Python writes it)."""
        return cls(
            queue_id=listed.queue_id,
            pipeline=listed.pipeline,
            attempt=listed.attempt,
            nodes=listed.nodes,
            runner=listed.runner,
            opened_at=listed.opened_at.isoformat(),
        )


class QueueBatch(ApiModel):
    """One batch handed to a node (seconds since the queue opened)."""

    claim_id: int
    attempt: int
    state: str = Field(description="open, finished, expired or released")
    replay: bool
    claimed_s: float
    started_s: float | None
    finished_s: float | None
    predicted_s: float
    items: int
    tests: int


class QueueNode(ApiModel):
    """A node's batches and when its last one finished."""

    node: str
    finish_s: float | None
    batches: list[QueueBatch]


class BudgetStop(ApiModel):
    """A node that stopped because nothing pending fit its budget."""

    node: str
    attempt: int
    at_s: float
    remaining_s: float | None
    not_run: list[str]


class RanTwiceModel(ApiModel):
    """A test run more than once, and where ("node@attempt" of each run)."""

    nodeid: str
    runs: list[str]


class QueueStatus(ApiModel):
    """What a queue did: batches per node, tests run twice or nowhere, budget stops, tail."""

    queue_id: int
    pipeline: str
    attempt: int
    runner: str
    planned_nodes: int
    error: float
    opened_at: str
    tests: int
    pending_items: int
    open_claims: int
    done: bool
    wait_s: float | None
    idle_tail_s: float | None = Field(description="first node's finish to the last's")
    nodes: list[QueueNode]
    budget_stops: list[BudgetStop]
    ran_twice: list[RanTwiceModel]
    rerun_by_retry: int
    never_ran: list[str] = Field(description="tests with no recorded run (so far)")

    @classmethod
    def of(cls, state: QueueState) -> QueueStatus:
        """The wire form of a queue's state: its facts, then its report's."""
        report = state.report
        return cls(
            queue_id=state.queue_id,
            pipeline=state.pipeline,
            attempt=state.attempt,
            runner=state.runner,
            planned_nodes=state.planned_nodes,
            error=state.error,
            opened_at=state.opened_at.isoformat(),
            tests=report.tests,
            pending_items=report.pending_items,
            open_claims=report.open_claims,
            done=report.done,
            wait_s=report.wait_s,
            idle_tail_s=report.idle_tail_s,
            nodes=[QueueNode.model_validate(n, from_attributes=True) for n in report.nodes],
            budget_stops=[
                BudgetStop.model_validate(s, from_attributes=True) for s in report.budget_stops
            ],
            ran_twice=[
                RanTwiceModel.model_validate(t, from_attributes=True) for t in report.ran_twice
            ],
            rerun_by_retry=report.rerun_by_retry,
            never_ran=list(report.never_ran),
        )
