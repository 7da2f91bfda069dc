"""Per-test rollups leave the ingest: a run is stored with its results and per-file rollups,
and a compactor later adds its results to the three per-test rollups in its own transaction
(ingest/rollup_compaction.py). `run.compacted` says which runs are in the per-test rollups;
readers add the results of the others, so every answer stays exact in between.

Revision ID: rollup_compaction
Revises: queue_pace
Create Date: 2026-12-10
"""

from alembic import op

revision = "rollup_compaction"
down_revision = "queue_pace"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Every run stored so far is in the per-test rollups; runs stored from now on are not yet.
    # (ADD COLUMN with a constant default rewrites nothing; the new default then applies.)
    op.execute(
        "ALTER TABLE run ADD COLUMN compacted boolean NOT NULL DEFAULT true;"
        " ALTER TABLE run ALTER COLUMN compacted SET DEFAULT false;"
        " COMMENT ON COLUMN run.compacted IS"
        " 'its results are in rollup_daily, rollup_cell_weekly and rollup_test_weekly'"
    )
    op.execute("CREATE INDEX run_not_compacted ON run (project_id, id) WHERE NOT compacted")
    # A run's results are COPYed together, so they lie in a few adjacent blocks of their day's
    # partition: a block range index finds them for the compactor and the readers at almost
    # no cost to the COPY.
    op.execute("CREATE INDEX test_result_run ON test_result USING brin (run_id)")


def downgrade() -> None:
    op.execute("DROP INDEX test_result_run")
    op.execute("DROP INDEX run_not_compacted")
    op.execute("ALTER TABLE run DROP COLUMN compacted")
