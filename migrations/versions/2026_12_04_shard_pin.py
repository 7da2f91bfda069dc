"""Shard pins: the shard assignment handed to the first shard of a CI pipeline that asks,
so every shard of that pipeline gets the same plan even when durations change between starts.
And the pages' session secret made here, not on a page's first GET: reads stay reads (a read
replica cannot write it).

Revision ID: shard_pin
Revises: platform
Create Date: 2026-12-04
"""

import secrets

import sqlalchemy as sa
from alembic import op

revision = "shard_pin"
down_revision = "sharedstate"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
CREATE TABLE shard_pin (
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    pipeline    text NOT NULL,
    total       integer NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- sha256 of the sorted collected nodeids: a shard that collected others is told so.
    collected   text NOT NULL,
    -- The whole answer (plan_id and every shard), as first handed out.
    answer      jsonb NOT NULL,
    PRIMARY KEY (project_id, pipeline, total)
);
CREATE INDEX shard_pin_age ON shard_pin (created_at);
"""
    )
    op.get_bind().execute(
        sa.text(
            "INSERT INTO server_secret (name, value) VALUES ('session', :v) ON CONFLICT DO NOTHING"
        ),
        {"v": secrets.token_bytes(32)},
    )


def downgrade() -> None:
    op.execute("DROP TABLE shard_pin")
