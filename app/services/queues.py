"""Queue mode: open or join a pipeline's queue, claim batches that fit a node's budget,
heartbeat, finish, release, and the report of what ran where (docs/planner.md#queue-mode).

A retried job (same pipeline and node, a later attempt) REPLAYS what that node ran or held in
its earlier attempts: those items go back to the queue reserved for it, and it takes them
first, then whatever the queue still holds. A CI re-run of a failed job so runs the same
tests again (taking over only the rest would run nothing and turn a red job green), and never
skips the queue's rest.

Why one module (about 560 lines): every transition (open or join, claim, take-over, start,
finish, release, expiry) locks the same rows in the same order (queue, claim, items), and one
file is where that order can be checked; the statements are app/db/queues.py, the sizing
rules analysis/queue/, the typed answers app/services/queue_answers.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import pandas as pd
from sqlalchemy import Connection

from analysis.accuracy.plan_record import queue_plan_id
from analysis.ci.runner_commands import JobSelection, select_jobs
from analysis.errors import AnswerError
from analysis.estimate import estimate_durations
from analysis.filters import Filters
from analysis.queue import (
    PROBE_S,
    BatchPick,
    Candidate,
    WorkItem,
    batch_target_s,
    needs_probe,
    pace_limit_s,
    pick_batch,
    queue_work_items,
    segment_goal_s,
    segment_size,
    steal_share,
    wait_retry_s,
)
from analysis.queue.report import ClaimRow, ResultRow, StopRow, queue_report
from app.db import queues as store
from app.db.runners import runner_of_runs
from app.project_records import Project
from app.services.plan_store import project_calibration, record_queue_plan
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
from app.services.recommendations import RecommendationError, load_history

# The margin a budget keeps when this project's plans have no measured error yet.
DEFAULT_ERROR = 0.25
DEFAULT_LEASE_S = 120.0
# A slow node whose pending items are all left for faster siblings asks again this soon (they
# are claiming them now, or a sibling's batch may yet have a light item to take over).
PASSED_RETRY_S = 0.5


class QueueNotFound(AnswerError):
    """No such queue (or claim) in this project."""

    status = 404
    code = "queue-not-found"


class QueueCollectedMismatch(AnswerError):
    """A node collected other tests than the queue holds: an error, never a silent mix."""

    status = 409
    code = "queue-collected-mismatch"


def collected_digest(collected: Sequence[str]) -> str:
    """Names a collection whatever its order and repeats."""
    return hashlib.sha256("\n".join(sorted(set(collected))).encode()).hexdigest()


@dataclass(frozen=True)
class NodeRef:
    """Who asks: a node (job index or name) of a pipeline, and its CI attempt."""

    node: str
    attempt: int


def open_queue(
    conn: Connection,
    project: Project,
    *,
    pipeline: str,
    who: NodeRef,
    collected: Sequence[str],
    nodes: int,
    runner: str,
    budget_s: float | None = None,
) -> QueueJoin:
    """Open the pipeline's queue (first node) or join it; idempotent. A node that collected
    other tests gets QueueCollectedMismatch naming the difference."""
    digest = collected_digest(collected)
    queue = store.find_queue(conn, project.id, pipeline)
    opened = False
    if queue is None:
        items, error, runs = _plan_items(conn, project, collected, nodes, runner, budget_s)
        queue = store.create_queue(
            conn,
            project.id,
            pipeline=pipeline,
            attempt=who.attempt,
            collected=digest,
            nodes=nodes,
            runner=runner,
            error=error,
            items=[_item_row(i) for i in items],
        )
        opened = queue is not None
        if queue is not None:
            # "Did it come true?" and the calibration compare each node with its even share.
            record_queue_plan(
                conn, project, queue.id, nodes=nodes, tests=len(collected),
                total_s=sum(i.predicted_s for i in items), runs=runs,
            )  # fmt: skip
        if queue is None:  # a sibling opened it meanwhile
            queue = store.find_queue(conn, project.id, pipeline)
            assert queue is not None
    if queue.collected != digest:
        raise _mismatch(conn, queue.id, collected)
    replay = 0
    if not opened and who.attempt > queue.attempt:
        replay = store.reserve_replay(conn, queue.id, who.node, who.attempt)
    store.record_event(conn, queue.id, who.node, who.attempt, "open" if opened else "join")
    everything = store.queue_nodeids(conn, queue.id)
    estimated = store.estimated_nodeids(conn, queue.id)
    return QueueJoin(
        queue_id=queue.id,
        pipeline=queue.pipeline,
        opened=opened,
        attempt=queue.attempt,
        runner=queue.runner,
        nodes=queue.nodes,
        tests=len(everything),
        error=queue.error,
        replay_items=replay,
        estimated=tuple(estimated),
        plan_id=queue_plan_id(queue.id),
    )


def _mismatch(conn: Connection, queue_id: int, collected: Sequence[str]) -> QueueCollectedMismatch:
    have = {n for n, _ in store.queue_nodeids(conn, queue_id)}
    mine = set(collected)
    extra, missing = sorted(mine - have), sorted(have - mine)
    return QueueCollectedMismatch(
        "this node collected other tests than the pipeline's queue holds: "
        f"{len(extra)} the queue lacks ({', '.join(extra[:5]) or 'none'}"
        f"{', ...' if len(extra) > 5 else ''}) and {len(missing)} this node did not collect "
        f"({', '.join(missing[:5]) or 'none'}{', ...' if len(missing) > 5 else ''}); "
        "every node of a pipeline must collect the same tests"
    )


def _plan_items(
    conn: Connection,
    project: Project,
    collected: Sequence[str],
    nodes: int,
    runner: str,
    budget_s: float | None,
) -> tuple[list[WorkItem], float, pd.DataFrame | None]:
    """The work items from the project's history, the error its predictions carry and the
    history's runs (None without history)."""
    durations = pd.Series(dtype=float)
    units: pd.Series | None = None
    try:
        history = load_history(conn, project, Filters())
    except RecommendationError:
        history = None
    if history is not None:
        durations = estimate_durations(history.results, history.runs)["duration_s"]
        units = history.results.drop_duplicates("nodeid", keep="last").set_index("nodeid")["file"]
        if runner == "pytest":
            stored = runner_of_runs(conn, project.id, history.runs["run_id"].tolist())
            runner = stored or runner
    items = queue_work_items(
        durations, collected, nodes=nodes, runner=runner, units=units, budget_s=budget_s
    )
    error = project_calibration(conn, project).expected_error
    runs = None if history is None else history.runs
    return items, DEFAULT_ERROR if error is None else float(error), runs


def _item_row(item: WorkItem) -> store.ItemRow:
    return store.ItemRow(
        item.position, item.name, item.unit, item.nodeids, item.estimated, item.predicted_s
    )


def _queue_or_404(conn: Connection, project: Project, queue_id: int) -> store.QueueRow:
    queue = store.load_queue(conn, project.id, queue_id)
    if queue is None:
        raise QueueNotFound(f"no queue {queue_id} in this project")
    return queue


def claim_batch(
    conn: Connection,
    project: Project,
    queue_id: int,
    *,
    who: NodeRef,
    remaining_s: float | None,
    min_batch_s: float = 0.0,
    lease_s: float = DEFAULT_LEASE_S,
    segmented: bool = False,
    min_segment_s: float = 0.0,
    pace: float | None = None,
    paced: bool = False,
) -> BatchClaim:
    """The node's next batch: pending items in queue order up to a target that shrinks as the
    queue empties, none predicted not to fit `remaining_s`; with nothing pending, the back
    half of what a sibling's batch has not begun (a take-over). `segmented`: only the first
    segment is begun now (the node starts the rest segment by segment, see start_claim), else
    the whole batch. Where one item is heavy, a `paced` node's first claim is a probe (the
    lightest items), and a node whose `pace` (measured / predicted) is markedly slower than a live
    sibling's passes the items it would finish last. With nothing to take it says why:
    `budget` (pending work fits no longer: the node hands back and stops), `wait` (siblings
    hold leases that may expire, or the items left are for faster siblings) or `done`."""
    # Siblings' paces matter only to a node that told its own (see pace_limit_s).
    context = store.claim_context(conn, project.id, queue_id, who.node, paces=pace is not None)
    if context is None:
        raise QueueNotFound(f"no queue {queue_id} in this project")
    queue, totals = context.queue, context.totals
    count, pending_s = totals.pending_items, totals.pending_s
    # A replay (items reserved for this node) is taken alone, before anything, and whole.
    probe = (
        paced
        and not totals.reserved_items
        and needs_probe(
            totals.heaviest_s, totals.open_s, queue.nodes, claimed_before=context.claimed_before
        )
    )
    limit = pace_limit_s(pace, context.sibling_paces, open_s=totals.open_s, nodes=queue.nodes)
    if probe:
        target = max(PROBE_S, min_batch_s)
        window = store.CLAIM_WINDOW  # the lightest items: as many as the probe's seconds take
    else:
        target = batch_target_s(
            pending_s, queue.nodes, total_s=totals.total_s, min_batch_s=min_batch_s
        )
        # Lock about what the target takes (items of the mean size, twice over); a budget
        # that fits none of those looks at the whole window before saying so.
        mean_s = pending_s / count if count else 1.0
        window = int(min(store.CLAIM_WINDOW, 2 * target / max(mean_s, 1e-9) + 8))
    mine = (
        store.lock_pending(conn, queue.id, who.node, window, reserved=True)
        if totals.reserved_items
        else []
    )
    replay = bool(mine)
    pending = mine or (
        store.lock_pending(conn, queue.id, who.node, window, reserved=False, from_back=probe)
        if count
        else []
    )
    if replay:
        target, limit = sum(p.predicted_s for p in pending), float("inf")  # the replay in one go
    pick = _pick(pending, target, remaining_s, queue.error, limit, from_back=probe)
    if not pick.positions and len(pending) == window < store.CLAIM_WINDOW:
        pending = store.lock_pending(conn, queue.id, who.node, reserved=replay, from_back=probe)
        pick = _pick(pending, target, remaining_s, queue.error, limit, from_back=probe)
    nothing = BatchClaim(
        queue_id=queue.id,
        state="done",
        claim_id=None,
        items=(),
        predicted_s=0.0,
        pending_items=count,
        error=queue.error,
        lease_s=lease_s,
        retry_after_s=None,
        selection=None,
    )
    first_segment_s = _segment_goal(queue, totals, min_segment_s) if segmented else None
    if pick.positions:
        return _hand_out(
            conn, queue, who, nothing, pick, reserved=replay, lease_s=lease_s,
            first_segment_s=first_segment_s, remaining_s=remaining_s,
            pending_left=count - len(pick.positions), pace=pace, probe=probe,
        )  # fmt: skip
    if pick.passed:
        # What is left is for faster siblings: what they have not begun, else wait.
        taken = _take_over(
            conn, queue, who, nothing, remaining_s=remaining_s, lease_s=lease_s,
            first_segment_s=first_segment_s, pace=pace, max_item_s=limit,
        )  # fmt: skip
        return taken or replace(nothing, state="wait", retry_after_s=PASSED_RETRY_S)
    if pending:
        unfit = store.items_at(conn, queue.id, pick.unfit)
        store.record_event(
            conn, queue.id, who.node, who.attempt, "budget-stop",
            detail={"remaining_s": remaining_s,
                    "not_run": [[i.name, i.predicted_s] for i in unfit]},
        )  # fmt: skip
        return replace(nothing, state="budget", not_fit=tuple(_item_answer(i) for i in unfit))
    if count:
        # Pending, but locked by siblings' claims being made right now.
        return replace(nothing, state="wait", retry_after_s=0.2)
    taken = _take_over(
        conn, queue, who, nothing, remaining_s=remaining_s, lease_s=lease_s,
        first_segment_s=first_segment_s, pace=pace, max_item_s=limit,
    )  # fmt: skip
    if taken is not None:
        return taken
    elsewhere = store.open_claims_elsewhere(conn, queue.id, who.node)
    if elsewhere is not None:
        # A sibling's batch may yet come back (a node that stops beating loses it).
        lease_left, predicted_left = elsewhere
        return replace(
            nothing,
            state="wait",
            retry_after_s=wait_retry_s(lease_left, predicted_left, queue.nodes),
        )
    return nothing


def _segment_goal(queue: store.QueueRow, totals: store.QueueTotals, min_segment_s: float) -> float:
    return segment_goal_s(
        totals.open_s, queue.nodes, total_s=totals.total_s, min_segment_s=min_segment_s
    )


def _first_segment(pool: Sequence[Candidate], goal_s: float | None) -> tuple[int, ...]:
    """The positions begun at once: all of them, or the first segment."""
    ordered = sorted(pool, key=lambda c: c.position)
    if goal_s is None:
        return tuple(c.position for c in ordered)
    count = segment_size([c.predicted_s for c in ordered], goal_s=goal_s)
    return tuple(c.position for c in ordered[:count])


def _hand_out(
    conn: Connection,
    queue: store.QueueRow,
    who: NodeRef,
    nothing: BatchClaim,
    pick: BatchPick,
    *,
    reserved: bool,
    lease_s: float,
    first_segment_s: float | None,
    remaining_s: float | None,
    pending_left: int,
    taken_over_from: tuple[int, str] | None = None,
    pace: float | None = None,
    probe: bool = False,
) -> BatchClaim:
    """Record the claim of `pick` (its first segment begun) and answer the batch."""
    predicted = dict(zip(pick.positions, pick.predicted_each, strict=True))
    started = _first_segment([Candidate(p, predicted[p]) for p in pick.positions], first_segment_s)
    detail: dict[str, Any] = {
        "items": len(pick.positions), "predicted_s": pick.predicted_s,
        "remaining_s": remaining_s, "started": len(started),
    }  # fmt: skip
    if pace is not None:
        detail["pace"] = pace
    if probe:
        detail["probe"] = True
    if pick.passed:
        detail["passed"] = len(pick.passed)
    if taken_over_from is not None:
        detail.update({"from_claim": taken_over_from[0], "from_node": taken_over_from[1]})
    claim_id, items = store.hand_out(
        conn, queue.id, node=who.node, attempt=who.attempt, positions=pick.positions,
        started=started, predicted_s=pick.predicted_s, lease_s=lease_s, replay=reserved,
        kind="claim" if taken_over_from is None else "take-over", detail=detail, pace=pace,
    )  # fmt: skip
    return replace(
        nothing,
        state="batch",
        claim_id=claim_id,
        replay=reserved,
        items=tuple(_item_answer(i) for i in items),
        predicted_s=pick.predicted_s,
        pending_items=pending_left,
        selection=_selection(conn, queue, items),
        started=started,
        taken_over_from=None if taken_over_from is None else taken_over_from[1],
    )


def _take_over(
    conn: Connection,
    queue: store.QueueRow,
    who: NodeRef,
    nothing: BatchClaim,
    *,
    remaining_s: float | None,
    lease_s: float,
    first_segment_s: float | None,
    pace: float | None = None,
    max_item_s: float = float("inf"),
) -> BatchClaim | None:
    """Nothing pending (for this node): take over the back half of what the sibling with the
    most work not begun holds, none heavier than `max_item_s`. Only items it has not begun
    move (they are `claimed`, not `running`, under the sibling's locked claim row), so every
    test still runs exactly once."""
    victim = store.lock_victim(conn, queue.id, who.node)
    if victim is None:
        return None
    unstarted = [
        Candidate(p.position, p.predicted_s)
        for p in store.unstarted_items(conn, queue.id, victim[0])
        if not p.reserved
    ]
    share = set(steal_share([c for c in unstarted if c.predicted_s <= max_item_s]))
    pick = pick_batch(
        [c for c in unstarted if c.position in share],
        target_s=float("inf"),
        remaining_s=remaining_s,
        error=queue.error,
    )
    if not pick.positions:
        return None
    store.drop_from_claim(conn, queue.id, victim[0], pick.positions, pick.predicted_s)
    return _hand_out(
        conn, queue, who, nothing, pick, reserved=False, lease_s=lease_s,
        first_segment_s=first_segment_s, remaining_s=remaining_s, pending_left=0,
        taken_over_from=victim, pace=pace,
    )  # fmt: skip


def _pick(
    pool: Sequence[store.PendingRow],
    target: float,
    remaining_s: float | None,
    error: float,
    max_item_s: float = float("inf"),
    *,
    from_back: bool = False,
) -> BatchPick:
    return pick_batch(
        [Candidate(p.position, p.predicted_s) for p in pool],
        target_s=target,
        remaining_s=remaining_s,
        error=error,
        max_item_s=max_item_s,
        from_back=from_back,
    )


def _item_answer(item: store.ItemRow) -> QueuedItem:
    return QueuedItem(
        position=item.position,
        name=item.name,
        nodeids=tuple(item.nodeids),
        predicted_s=round(item.predicted_s, 3),
        estimated=tuple(item.estimated),
    )


def _selection(
    conn: Connection, queue: store.QueueRow, items: Sequence[store.ItemRow]
) -> JobSelection | None:
    """The batch in its runner's own words (pytest takes the nodeids)."""
    if queue.runner == "pytest":
        return None
    units = pd.Series(dict(store.queue_nodeids(conn, queue.id)), dtype=object)
    nodeids = [n for item in items for n in item.nodeids]
    return select_jobs(queue.runner, units, [nodeids])[0]


def heartbeat(
    conn: Connection, project: Project, queue_id: int, *, who: NodeRef, lease_s: float
) -> LeaseExtended:
    """Extend the node's leases; how many claims it holds."""
    queue = _queue_or_404(conn, project, queue_id)
    return LeaseExtended(store.extend_leases(conn, queue.id, who.node, lease_s), lease_s)


def _claim_or_404(conn: Connection, queue_id: int, claim_id: int) -> store.ClaimRecord:
    claims = store.load_claims(conn, queue_id, claim_id)
    if not claims:
        raise QueueNotFound(f"no claim {claim_id} in queue {queue_id}")
    return claims[0]


def start_claim(
    conn: Connection,
    project: Project,
    queue_id: int,
    claim_id: int,
    *,
    segment: bool = False,
    min_segment_s: float = 0.0,
) -> BatchStarted:
    """The node begins the claim's items it has not begun: all of them, or (`segment`) the next
    segment. Items a sibling took over are not begun (and not the node's to run); the
    positions begun are in `started`."""
    queue = _queue_or_404(conn, project, queue_id)
    claim = _claim_or_404(conn, queue.id, claim_id)
    state = store.lock_claim(conn, queue.id, claim.id)
    unstarted = store.unstarted_items(conn, queue.id, claim.id)
    goal = None
    if segment:
        goal = _segment_goal(queue, store.queue_totals(conn, queue.id, claim.node), min_segment_s)
    wanted = _first_segment([Candidate(p.position, p.predicted_s) for p in unstarted], goal)
    started = store.mark_running(conn, queue.id, claim.id, wanted) if wanted else []
    store.mark_started(conn, queue.id, claim.id)
    store.record_event(
        conn, queue.id, claim.node, claim.attempt, "start", claim_id=claim.id,
        detail={"items": len(started)},
    )  # fmt: skip
    return BatchStarted(
        claim_id=claim.id,
        state=state or claim.state,
        started=tuple(started),
        unstarted=len(unstarted) - len(started),
    )


def finish_claim(
    conn: Connection,
    project: Project,
    queue_id: int,
    claim_id: int,
    results: Sequence[tuple[str, float | None, str | None]],
) -> BatchFinished:
    """Record the batch's measured durations (nodeids outside the claim are ignored); a claim
    whose lease ran out still counts what it ran."""
    claims = store.load_claims(conn, queue_id, claim_id, project_id=project.id)
    if not claims:
        raise QueueNotFound(f"no claim {claim_id} in queue {queue_id} of this project")
    claim = claims[0]
    items = store.items_at(conn, queue_id, claim.positions)
    mine = {n for item in items for n in item.nodeids}
    kept = [r for r in results if r[0] in mine]
    ran = {r[0] for r in kept}
    # An item is done when every test of it ran; the rest goes back to the queue (a batch cut
    # short by the budget or a crashed runner hands back what it did not reach).
    done = [item.position for item in items if set(item.nodeids) <= ran]
    late = claim.state != "open"
    detail = {"results": len(kept), "measured_s": sum(r[1] or 0.0 for r in kept), "late": late}
    handed_back = store.finish_claim(conn, queue_id, claim, kept, done, detail)
    return BatchFinished(claim_id=claim.id, recorded=len(kept), late=late, handed_back=handed_back)


def release(
    conn: Connection, project: Project, queue_id: int, *, who: NodeRef, reason: str
) -> ClaimsReleased:
    """The node hands its open claims back (a budget stop, a cancel); what is left pending,
    by name with its prediction."""
    queue = _queue_or_404(conn, project, queue_id)
    released = store.release_claims(conn, queue.id, who.node)
    store.record_event(
        conn, queue.id, who.node, who.attempt, "release",
        detail={"claims": released, "reason": reason},
    )  # fmt: skip
    left = store.pending_items(conn, queue.id)
    return ClaimsReleased(len(released), tuple(_item_answer(i) for i in left))


def queue_status(conn: Connection, project: Project, queue_id: int) -> QueueState:
    """What ran where, twice or nowhere; each node's batches, budget stops, the idle tail."""
    queue = _queue_or_404(conn, project, queue_id)
    claims = store.load_claims(conn, queue.id, as_of_now=True)
    sizes = {
        item.position: len(item.nodeids)
        for item in store.items_at(conn, queue.id, sorted({p for c in claims for p in c.positions}))
    }
    rows = [
        ClaimRow(
            c.id,
            c.node,
            c.attempt,
            c.state,
            c.claimed_s,
            c.started_s,
            c.finished_s,
            c.predicted_s,
            len(c.positions),
            sum(sizes.get(p, 0) for p in c.positions),
            c.replay,
        )
        for c in claims
    ]
    results = [ResultRow(*r) for r in store.load_results(conn, queue.id)]
    stops = [
        StopRow(node, attempt, at_s, detail.get("remaining_s"),
                tuple(str(n[0]) for n in detail.get("not_run", [])))
        for node, attempt, at_s, detail in store.load_stops(conn, queue.id)
    ]  # fmt: skip
    nodeids = [n for n, _ in store.queue_nodeids(conn, queue.id)]
    report = queue_report(
        nodeids,
        rows,
        results,
        pending_items=store.pending_count(conn, queue.id, as_of_now=True),
        stops=stops,
    )
    return QueueState(
        queue_id=queue.id,
        pipeline=queue.pipeline,
        attempt=queue.attempt,
        runner=queue.runner,
        planned_nodes=queue.nodes,
        error=queue.error,
        opened_at=queue.created_at,
        report=report,
    )


def pipeline_queue_status(conn: Connection, project: Project, pipeline: str) -> QueueState:
    """The status of a pipeline's queue."""
    queue = store.find_queue(conn, project.id, pipeline)
    if queue is None:
        raise QueueNotFound(f"no queue for pipeline {pipeline!r}")
    return queue_status(conn, project, queue.id)


def list_queues(conn: Connection, project: Project, *, limit: int = 50) -> list[QueueListing]:
    """The project's newest queues."""
    return [
        QueueListing(q.id, q.pipeline, q.attempt, q.nodes, q.runner, q.created_at)
        for q in store.recent_queues(conn, project.id, limit)
    ]
