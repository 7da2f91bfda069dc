"""Queue mode: the pace a node declared with each claim (its measured / predicted seconds so
far), so a claim can leave the items a slow node would finish last to its faster siblings.

Revision ID: queue_pace
Revises: queue_plans
Create Date: 2026-12-09
"""

from alembic import op

revision = "queue_pace"
down_revision = "queue_plans"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        "ALTER TABLE work_queue_claim ADD COLUMN pace double precision;"
        " COMMENT ON COLUMN work_queue_claim.pace IS"
        " 'the claiming node''s measured / predicted seconds so far (null: not measured yet)'"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE work_queue_claim DROP COLUMN pace")
