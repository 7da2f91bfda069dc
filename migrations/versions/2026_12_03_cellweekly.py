"""Weekly per-(cell, test) rollup: per-test figures of cell dimensions read weeks, not days.

Revision ID: cellweekly
Revises: worker
Create Date: 2026-12-03
"""

from alembic import op

revision = "cellweekly"
down_revision = "runners"
branch_labels = None
depends_on = None

SCHEMA = """
-- The facts of rollup_daily summed per week (Monday): by=job|machine|branch|label:* need the
-- sums per (test, cell) over a window, and whole weeks read a seventh of the daily rows.
-- Kept equal to the sum of rollup_daily over the week's days (ingest and prune keep it so).
CREATE TABLE rollup_cell_weekly (LIKE rollup_daily INCLUDING ALL) WITH (fillfactor = 50);
ALTER TABLE rollup_cell_weekly RENAME COLUMN day TO week;
-- Each run of a cell updates its week's rows: free room on each page keeps them HOT.

INSERT INTO rollup_cell_weekly (project_id, week, cell_id, test_id, runs, known, total_s,
    max_s, setup_s, call_s, teardown_s, failures, flaky, peak_rss_mib)
SELECT project_id, date_trunc('week', day)::date, cell_id, test_id, sum(runs), sum(known),
    sum(total_s), max(max_s), sum(setup_s), sum(call_s), sum(teardown_s), sum(failures),
    sum(flaky), max(peak_rss_mib)
FROM rollup_daily
GROUP BY 1, 2, 3, 4
ORDER BY 1, 2, 3, 4;
"""


def upgrade() -> None:
    op.execute(SCHEMA)


def downgrade() -> None:
    op.execute("DROP TABLE rollup_cell_weekly")
