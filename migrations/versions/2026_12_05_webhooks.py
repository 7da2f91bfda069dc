"""Webhooks: the addresses a project's admins register, and every delivery with its state.

Revision ID: webhooks
Revises: shard_pin
Create Date: 2026-12-05
"""

from alembic import op

revision = "webhooks"
down_revision = "shard_pin"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
CREATE TABLE webhook (
    id          bigserial PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    url         text NOT NULL,
    -- Signs each body (HMAC-SHA256); kept as given, since signing needs it, shown once.
    secret      text NOT NULL,
    format      text NOT NULL DEFAULT 'json' CHECK (format IN ('json', 'slack')),
    -- The events this address hears.
    events      text[] NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_project ON webhook (project_id);

-- One row per (webhook, event): the body as first made (retries send the same bytes), the
-- state and the record of the attempts. The row is the queue item, claimed with SKIP LOCKED.
CREATE TABLE webhook_delivery (
    id              bigserial PRIMARY KEY,
    webhook_id      bigint NOT NULL REFERENCES webhook(id) ON DELETE CASCADE,
    project_id      bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    event           text NOT NULL,
    event_id        text NOT NULL,
    -- Sent once per key: a change's id, a digest's week.
    dedupe_key      text,
    body            bytea NOT NULL,
    state           text NOT NULL DEFAULT 'pending'
                    CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    -- Due time while pending; while an attempt runs, the end of its sender's lease.
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_attempt_at timestamptz,
    last_status     integer,
    last_error      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz,
    UNIQUE (webhook_id, dedupe_key)
);
CREATE INDEX webhook_delivery_due ON webhook_delivery (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_delivery_recent ON webhook_delivery (project_id, created_at DESC);
"""
    )


def downgrade() -> None:
    op.execute("DROP TABLE webhook_delivery")
    op.execute("DROP TABLE webhook")
