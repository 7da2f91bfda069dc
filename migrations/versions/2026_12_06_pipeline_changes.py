"""A pipeline's wall and machine time as change series: the default branch's pipelines watched
until final (pushed exactly once), the two series' detector states per project and branch, and
changes that belong to no cell.

Revision ID: pipeline_changes
Revises: queue_steal
Create Date: 2026-12-06
"""

from alembic import op

revision = "pipeline_changes"
down_revision = "queue_steal"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
-- A pipeline of the watched branch, from its first detected job until its point is final
-- (docs/changes.md): first_run_id orders pipelines by their first job's arrival; final_at set
-- once, in the transaction that pushes the point (or leaves it out: pushed false).
CREATE TABLE pipeline_watch (
    project_id   bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    pipeline     text NOT NULL,
    branch       text NOT NULL,
    first_run_id bigint NOT NULL,
    final_at     timestamptz,
    pushed       boolean NOT NULL DEFAULT false,
    run_id       bigint,
    jobs         integer,
    wall_s       double precision,
    machine_s    double precision,
    PRIMARY KEY (project_id, pipeline)
);
CREATE INDEX pipeline_watch_order ON pipeline_watch (project_id, branch, first_run_id);

-- The detector state of a project's pipeline series on one branch, key 'wall' or 'machine':
-- run count, current segment start and the last runs since then (at most the window).
CREATE TABLE pipeline_series (
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    branch      text NOT NULL,
    key         text NOT NULL,
    count       bigint NOT NULL,
    anchor      bigint NOT NULL,
    durations   double precision[] NOT NULL,
    run_ids     bigint[] NOT NULL,
    PRIMARY KEY (project_id, branch, key)
);

-- A pipeline change belongs to no cell: its series is the project's.
ALTER TABLE duration_change ALTER COLUMN cell_id DROP NOT NULL;
CREATE UNIQUE INDEX duration_change_pipeline ON duration_change (project_id, kind, key,
    run_id_after) WHERE cell_id IS NULL;
"""
    )


def downgrade() -> None:
    op.execute(
        """
DELETE FROM duration_change WHERE cell_id IS NULL;
DROP INDEX duration_change_pipeline;
ALTER TABLE duration_change ALTER COLUMN cell_id SET NOT NULL;
DROP TABLE pipeline_series;
DROP TABLE pipeline_watch;
"""
    )
