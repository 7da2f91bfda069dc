"""Keep a merged rerun's last attempt's own seconds beside the summed duration.

Revision ID: last_attempt
Revises: cellweekly
Create Date: 2026-12-03
"""

from alembic import op

revision = "last_attempt"
down_revision = "cellweekly"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # On the partitioned parent: every day's partition gets the column (NULL, no rewrite).
    op.execute("ALTER TABLE test_result ADD COLUMN last_attempt_s float8")


def downgrade() -> None:
    op.execute("ALTER TABLE test_result DROP COLUMN last_attempt_s")
