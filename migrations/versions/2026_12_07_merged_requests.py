"""A run's merged requests: `sha:number` of the commits of its first-parent history whose
message names the pull or merge request they came in (the client reads them from git), so a
change names the requests that brought it.

Revision ID: merged_requests
Revises: pipeline_changes
Create Date: 2026-12-07
"""

from alembic import op

revision = "merged_requests"
down_revision = "pipeline_changes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE run ADD COLUMN merged_requests text[]")


def downgrade() -> None:
    op.execute("ALTER TABLE run DROP COLUMN merged_requests")
