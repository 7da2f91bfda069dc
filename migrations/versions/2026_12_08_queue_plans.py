"""Queue plans: a pipeline's queue is stored as a plan of its nodes (kind 'queue'), so the
nodes' uploads feed "Did it come true?" and the calibration as a static plan's jobs do.

Revision ID: queue_plans
Revises: merged_requests
Create Date: 2026-12-08
"""

from alembic import op

revision = "queue_plans"
down_revision = "merged_requests"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE plan DROP CONSTRAINT plan_kind_check,"
        " ADD CONSTRAINT plan_kind_check CHECK (kind IN ('split', 'shard', 'queue'))"
    )


def downgrade() -> None:
    op.execute(
        "DELETE FROM plan WHERE kind = 'queue';"
        " ALTER TABLE plan DROP CONSTRAINT plan_kind_check,"
        " ADD CONSTRAINT plan_kind_check CHECK (kind IN ('split', 'shard'))"
    )
