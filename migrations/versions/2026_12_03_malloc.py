"""Allocator state: per run the state glibc's malloc ran the tests in (the
plugin's session `malloc`: pinned, environment, dynamic or other; NULL = unknown), so the job
model can tell a history whose allocation costs a fresh job process would not pay alike.

Revision ID: malloc
Revises: wait
Create Date: 2026-12-03
"""

from alembic import op

revision = "malloc"
down_revision = "wait"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL for every existing run (no rewrite): older reports did not say.
    op.execute("ALTER TABLE run ADD COLUMN malloc text")


def downgrade() -> None:
    op.execute("ALTER TABLE run DROP COLUMN malloc")
