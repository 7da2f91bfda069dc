"""Plans as handed out (what they predicted) and the plan each run executed.

Revision ID: loop
Revises: last_attempt
Create Date: 2026-12-03
"""

from alembic import op

revision = "loop"
down_revision = "last_attempt"
branch_labels = None
depends_on = None

SCHEMA = """
-- One row per plan handed out (a split recommendation or a shard assignment): its prediction
-- as first served, so the jobs that run it can be compared with it ("close the loop").
CREATE TABLE plan (
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    id          text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('split', 'shard')),
    cell        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now(),
    jobs        integer NOT NULL,
    wait_s      double precision,
    machine_s   double precision,
    cost        double precision,
    -- Per job: index, name, predicted wall and its parts, workers, machine, cost, selection.
    predicted   jsonb NOT NULL,
    PRIMARY KEY (project_id, id)
);
CREATE INDEX plan_recent ON plan (project_id, created_at DESC);

ALTER TABLE run ADD COLUMN plan_id text;
CREATE INDEX run_plan ON run (project_id, plan_id) WHERE plan_id IS NOT NULL;

-- Runs stored before this revision: the plan their upload named (form field or label).
UPDATE run SET plan_id = coalesce(u.metadata->>'plan_id', run.labels->>'plan')
FROM upload u
WHERE u.id = run.upload_id
  AND coalesce(u.metadata->>'plan_id', run.labels->>'plan') IS NOT NULL;
"""


def upgrade() -> None:
    op.execute(SCHEMA)


def downgrade() -> None:
    op.execute("DROP INDEX run_plan")
    op.execute("ALTER TABLE run DROP COLUMN plan_id")
    op.execute("DROP TABLE plan")
