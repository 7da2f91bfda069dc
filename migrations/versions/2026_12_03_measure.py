"""What the job model needs: per-result CPU and execution order, per-run CPU, start-up,
collection (overall, counts, per file), invocation and the CI job's wall.

Revision ID: measure
Revises: last_attempt
Create Date: 2026-12-03
"""

from alembic import op

revision = "measure"
down_revision = "loop"
branch_labels = None
depends_on = None

_RUN_COLUMNS = (
    ("cpu_s", "double precision"),
    ("startup_s", "double precision"),
    ("collect_s", "double precision"),
    ("job_wall_s", "double precision"),
    ("collected_tests", "integer"),
    ("collected_files", "integer"),
    ("collect_by_file", "jsonb"),
    ("invocation", "text"),
)


def upgrade() -> None:
    # On the partitioned parent: every day's partition gets the columns (NULL, no rewrite).
    op.execute("ALTER TABLE test_result ADD COLUMN cpu_s double precision, ADD COLUMN seq integer")
    op.execute(
        "ALTER TABLE run " + ", ".join(f"ADD COLUMN {name} {kind}" for name, kind in _RUN_COLUMNS)
    )


def downgrade() -> None:
    op.execute("ALTER TABLE run " + ", ".join(f"DROP COLUMN {name}" for name, _ in _RUN_COLUMNS))
    op.execute("ALTER TABLE test_result DROP COLUMN cpu_s, DROP COLUMN seq")
