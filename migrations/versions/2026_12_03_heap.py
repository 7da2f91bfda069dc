"""Heap-bound test time: per result the seconds in explicit gc.collect() calls,
the heap walks and the heap a walk saw; per run the gc-tracked objects at collection start,
collection end and after the last test.

Revision ID: heap
Revises: rootdir
Create Date: 2026-12-03
"""

from alembic import op

revision = "heap"
down_revision = "rootdir"
branch_labels = None
depends_on = None

_RESULT_COLUMNS = (
    ("gc_s", "double precision"),
    ("heap_scans", "integer"),
    ("heap_objects", "bigint"),
)
_RUN_COLUMNS = (
    ("heap_objects_start", "bigint"),
    ("heap_objects_collected", "bigint"),
    ("heap_objects_end", "bigint"),
)


def _add(table: str, columns: tuple[tuple[str, str], ...]) -> None:
    op.execute(
        f"ALTER TABLE {table} " + ", ".join(f"ADD COLUMN {name} {kind}" for name, kind in columns)
    )


def _drop(table: str, columns: tuple[tuple[str, str], ...]) -> None:
    op.execute(f"ALTER TABLE {table} " + ", ".join(f"DROP COLUMN {name}" for name, _ in columns))


def upgrade() -> None:
    # On the partitioned parent: every day's partition gets the columns (NULL, no rewrite).
    _add("test_result", _RESULT_COLUMNS)
    _add("run", _RUN_COLUMNS)


def downgrade() -> None:
    _drop("run", _RUN_COLUMNS)
    _drop("test_result", _RESULT_COLUMNS)
