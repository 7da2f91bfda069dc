"""The directory a run's nodeids are relative to: server plans replay a `--pyargs`
history as modules, which needs it beside `run.invocation`.

Revision ID: rootdir
Revises: measure
Create Date: 2026-12-03
"""

from alembic import op

revision = "rootdir"
down_revision = "measure"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE run ADD COLUMN rootdir text")


def downgrade() -> None:
    op.execute("ALTER TABLE run DROP COLUMN rootdir")
