"""Run-queue wait: per result and per run the seconds the tests' thread(s)
were runnable but waiting for a CPU, so history from a busy machine can be made quiet.

Revision ID: wait
Revises: heap
Create Date: 2026-12-03
"""

from alembic import op

revision = "wait"
down_revision = "heap"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # On the partitioned parent: every day's partition gets the column (NULL, no rewrite).
    op.execute("ALTER TABLE test_result ADD COLUMN cpu_wait_s double precision")
    op.execute("ALTER TABLE run ADD COLUMN cpu_wait_s double precision")


def downgrade() -> None:
    op.execute("ALTER TABLE run DROP COLUMN cpu_wait_s")
    op.execute("ALTER TABLE test_result DROP COLUMN cpu_wait_s")
