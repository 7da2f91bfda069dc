"""Worker heartbeats: liveness for /readyz and leases for taking over a dead worker's claim.

Revision ID: worker
Revises: security
Create Date: 2026-12-03
"""

from alembic import op

revision = "worker"
down_revision = "security"
branch_labels = None
depends_on = None

SCHEMA = """
-- One row per running worker, rewritten every few seconds on its own connection. A claim
-- whose worker stopped beating for the lease time is taken over: the claiming backend
-- (backend_pid, identified with backend_start so a reused pid is never hit) is terminated.
CREATE TABLE worker_heartbeat (
    name          text PRIMARY KEY,
    host          text NOT NULL,
    pid           integer NOT NULL,
    started_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    seen_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    state         text NOT NULL,
    upload_id     bigint,
    backend_pid   integer,
    backend_start timestamptz,
    detail        text
);
CREATE INDEX worker_heartbeat_upload ON worker_heartbeat (upload_id)
    WHERE upload_id IS NOT NULL;
"""


def upgrade() -> None:
    op.execute(SCHEMA)


def downgrade() -> None:
    op.execute("DROP TABLE worker_heartbeat")
