"""The test runner of each run (pytest, jest, maven, go...) and whether its files are derived.

Revision ID: runners
Revises: 0001
Create Date: 2026-12-03
"""

from alembic import op

revision = "runners"
down_revision = "worker"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL for runs stored before runner detection.
    op.execute(
        "ALTER TABLE run ADD COLUMN runner text, ADD COLUMN file_derived boolean NOT NULL DEFAULT false"
    )


def downgrade() -> None:
    op.execute("ALTER TABLE run DROP COLUMN runner, DROP COLUMN file_derived")
