"""Queue mode: a pipeline's collected tests as work items CI nodes claim in leased batches,
with every claim, start, finish and measured duration recorded.

Revision ID: queue
Revises: changes_store
Create Date: 2026-12-05
"""

from alembic import op

revision = "queue"
down_revision = "changes_store"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
CREATE TABLE work_queue (
    id          bigserial PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    pipeline    text NOT NULL,
    -- The attempt that opened it; a node joining with a later attempt is a retried job.
    attempt     integer NOT NULL,
    -- sha256 of the sorted collected nodeids: nodes that collected others are refused.
    collected   text NOT NULL,
    nodes       integer NOT NULL,
    runner      text NOT NULL,
    -- The relative error of the predictions (the budget's margin).
    error       double precision NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    UNIQUE (project_id, pipeline)
);
CREATE INDEX work_queue_age ON work_queue (created_at);

CREATE TABLE work_queue_claim (
    id          bigserial PRIMARY KEY,
    queue_id    bigint NOT NULL REFERENCES work_queue(id) ON DELETE CASCADE,
    node        text NOT NULL,
    attempt     integer NOT NULL,
    -- open | finished | expired (lease lost) | released (handed back)
    state       text NOT NULL DEFAULT 'open',
    replay      boolean NOT NULL DEFAULT false,
    -- The items handed out (kept after a lease expires, so a late finish still counts).
    positions   integer[] NOT NULL,
    predicted_s double precision NOT NULL,
    claimed_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    lease_until timestamptz NOT NULL,
    started_at  timestamptz,
    finished_at timestamptz
);
CREATE INDEX work_queue_claim_open ON work_queue_claim (queue_id, state, lease_until);

CREATE TABLE work_queue_item (
    queue_id    bigint NOT NULL REFERENCES work_queue(id) ON DELETE CASCADE,
    position    integer NOT NULL,
    name        text NOT NULL,
    unit        text NOT NULL,
    nodeids     text[] NOT NULL,
    estimated   text[] NOT NULL,
    predicted_s double precision NOT NULL,
    -- pending | claimed | done
    state       text NOT NULL DEFAULT 'pending',
    claim_id    bigint REFERENCES work_queue_claim(id) ON DELETE SET NULL,
    -- A retried job's replay: only that node takes it.
    reserved_for text,
    PRIMARY KEY (queue_id, position)
);
CREATE INDEX work_queue_item_pending ON work_queue_item (queue_id, position)
    WHERE state = 'pending';

CREATE TABLE work_queue_event (
    id          bigserial PRIMARY KEY,
    queue_id    bigint NOT NULL REFERENCES work_queue(id) ON DELETE CASCADE,
    claim_id    bigint,
    node        text NOT NULL,
    attempt     integer NOT NULL,
    -- open | join | claim | start | finish | expire | release | budget-stop | replay
    kind        text NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    detail      jsonb NOT NULL DEFAULT '{}'::jsonb
);
CREATE INDEX work_queue_event_queue ON work_queue_event (queue_id, id);

CREATE TABLE work_queue_result (
    queue_id    bigint NOT NULL REFERENCES work_queue(id) ON DELETE CASCADE,
    claim_id    bigint,
    node        text NOT NULL,
    attempt     integer NOT NULL,
    nodeid      text NOT NULL,
    duration_s  double precision,
    outcome     text,
    at          timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX work_queue_result_queue ON work_queue_result (queue_id, nodeid);
"""
    )


def downgrade() -> None:
    op.execute(
        "DROP TABLE work_queue_result, work_queue_event, work_queue_item, work_queue_claim,"
        " work_queue"
    )
