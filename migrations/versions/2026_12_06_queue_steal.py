"""Queue mode: an item a node has begun is `running` (no sibling may take it over); a claim's
items are found by claim (starts, take-overs and finishes look them up that way).

Revision ID: queue_steal
Revises: queue
Create Date: 2026-12-06
"""

from alembic import op

revision = "queue_steal"
down_revision = "queue"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
COMMENT ON COLUMN work_queue_item.state IS
    'pending | claimed (in a batch, not begun: an idle node may take it over) | running | done';
CREATE INDEX work_queue_item_claim ON work_queue_item (queue_id, claim_id)
    WHERE state IN ('claimed', 'running');
"""
    )


def downgrade() -> None:
    op.execute(
        "DROP INDEX work_queue_item_claim; COMMENT ON COLUMN work_queue_item.state IS NULL"
    )
