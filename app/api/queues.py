"""Queue mode endpoints: CI nodes open or join a pipeline's queue, claim leased batches that fit
their budget, beat, finish and release; anyone who may read sees what ran where."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query, Request

from app.http.deps import ConnDep, ReadProject, authorize
from app.http.params import Text
from app.http.responses import PROJECT_ERRORS, answers
from app.project_records import Project
from app.schemas.queues import (
    ClaimRequest,
    FinishRequest,
    HeartbeatRequest,
    OpenQueueRequest,
    QueueBatchStarted,
    QueueClaim,
    QueueFinished,
    QueueHeartbeat,
    QueueOpened,
    QueueReleased,
    QueueStatus,
    QueueSummary,
    ReleaseRequest,
    StartRequest,
)
from app.services import queues as service
from app.services.queues import NodeRef

router = APIRouter(prefix="/api/v1/projects/{slug}/queues", tags=["queue"])

QueueId = Annotated[int, Path(ge=1, le=2**62)]
ClaimId = Annotated[int, Path(ge=1, le=2**62)]


def upload_project(request: Request, conn: ConnDep, slug: str) -> Project:
    """Dependency: the project in the path, writable by this CI token (scope upload)."""
    return authorize(request, conn, slug, "upload")


CiProject = Annotated[Project, Depends(upload_project)]


@router.post("", **answers(QueueOpened, 400, 409, *PROJECT_ERRORS))
def open_queue(project: CiProject, conn: ConnDep, body: OpenQueueRequest) -> QueueOpened:
    """Open the pipeline's queue of the collected tests, or join it (idempotent).

    409 `queue-collected-mismatch` when this node collected other tests than the queue holds.
    A node with a later `attempt` than the queue's is a retried job: it replays what it ran."""
    joined = service.open_queue(
        conn,
        project,
        pipeline=body.pipeline,
        who=NodeRef(body.node, body.attempt),
        collected=body.collected,
        nodes=body.nodes,
        runner=body.runner,
        budget_s=body.budget_s,
    )
    return QueueOpened.of(joined)


@router.post("/{queue_id}/claims", **answers(QueueClaim, 400, *PROJECT_ERRORS))
def claim(project: CiProject, conn: ConnDep, queue_id: QueueId, body: ClaimRequest) -> QueueClaim:
    """The next leased batch that fits `remaining_s` with the prediction's error as margin;
    else `state` says `budget` (stop and release), `wait` (ask again) or `done`."""
    claimed = service.claim_batch(
        conn,
        project,
        queue_id,
        who=NodeRef(body.node, body.attempt),
        remaining_s=body.remaining_s,
        min_batch_s=body.min_batch_s,
        lease_s=body.lease_s,
        segmented=body.segmented,
        min_segment_s=body.min_segment_s,
        pace=body.pace,
        paced=body.paced,
    )
    return QueueClaim.of(claimed)


@router.post("/{queue_id}/heartbeat", **answers(QueueHeartbeat, 400, *PROJECT_ERRORS))
def heartbeat(
    project: CiProject, conn: ConnDep, queue_id: QueueId, body: HeartbeatRequest
) -> QueueHeartbeat:
    """Extend the node's leases: a node that stops beating loses its batch to the others."""
    who = NodeRef(body.node, body.attempt)
    return QueueHeartbeat.of(
        service.heartbeat(conn, project, queue_id, who=who, lease_s=body.lease_s)
    )


@router.post(
    "/{queue_id}/claims/{claim_id}/start", **answers(QueueBatchStarted, 400, *PROJECT_ERRORS)
)
def start(
    project: CiProject,
    conn: ConnDep,
    queue_id: QueueId,
    claim_id: ClaimId,
    body: StartRequest | None = None,
) -> QueueBatchStarted:
    """The node begins the batch's items it has not begun (or, with `segment`, the next
    segment); `started` names the positions it may run: a sibling may have taken over the
    rest."""
    body = body or StartRequest()
    started = service.start_claim(
        conn, project, queue_id, claim_id, segment=body.segment, min_segment_s=body.min_segment_s
    )
    return QueueBatchStarted.of(started)


@router.post("/{queue_id}/claims/{claim_id}/finish", **answers(QueueFinished, 400, *PROJECT_ERRORS))
def finish(
    project: CiProject, conn: ConnDep, queue_id: QueueId, claim_id: ClaimId, body: FinishRequest
) -> QueueFinished:
    """The batch's measured durations; a late finish (lease lost) still counts."""
    results = [(r.nodeid, r.duration_s, r.outcome) for r in body.results]
    return QueueFinished.of(service.finish_claim(conn, project, queue_id, claim_id, results))


@router.post("/{queue_id}/release", **answers(QueueReleased, 400, *PROJECT_ERRORS))
def release(
    project: CiProject, conn: ConnDep, queue_id: QueueId, body: ReleaseRequest
) -> QueueReleased:
    """Hand the node's open claims back (a budget stop); what is left, by name."""
    who = NodeRef(body.node, body.attempt)
    return QueueReleased.of(service.release(conn, project, queue_id, who=who, reason=body.reason))


@router.get("", **answers(list[QueueSummary], *PROJECT_ERRORS))
def queues(
    project: ReadProject, conn: ConnDep, limit: Annotated[int, Query(ge=1, le=200)] = 50
) -> list[QueueSummary]:
    """The project's newest queues (at most `limit`)."""
    return [QueueSummary.of(q) for q in service.list_queues(conn, project, limit=limit)]


@router.get("/pipeline", **answers(QueueStatus, *PROJECT_ERRORS))
def pipeline_queue(
    project: ReadProject, conn: ConnDep, pipeline: Annotated[Text, Query(max_length=200)]
) -> QueueStatus:
    """The status of a pipeline's queue."""
    return QueueStatus.of(service.pipeline_queue_status(conn, project, pipeline))


@router.get("/{queue_id}", **answers(QueueStatus, *PROJECT_ERRORS))
def status(project: ReadProject, conn: ConnDep, queue_id: QueueId) -> QueueStatus:
    """What ran where, what ran twice, what never ran; each node's batches and idle tail."""
    return QueueStatus.of(service.queue_status(conn, project, queue_id))
