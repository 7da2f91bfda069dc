"""Exit tail: per run the seconds from the pytest session's end to the process's exit
(reports written, interpreter shutdown, worker pools stopped), measured by `laptime-ci run`.

Revision ID: exit_tail
Revises: webhooks
Create Date: 2026-12-05
"""

from alembic import op

revision = "exit_tail"
down_revision = "webhooks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE run ADD COLUMN exit_s double precision")


def downgrade() -> None:
    op.execute("ALTER TABLE run DROP COLUMN exit_s")
