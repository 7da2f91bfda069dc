"""Detected changes stored: each series' detector state, the changes found at ingest, the runs
whose detection must be done again, the default branch override, and each run's first-parent
history (the commits between two runs, for the bisect list).

Revision ID: changes_store
Revises: exit_tail
Create Date: 2026-12-05
"""

from alembic import op

revision = "changes_store"
down_revision = "flaky"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
-- The branch whose runs are watched for changes; NULL: detected (docs/changes.md).
ALTER TABLE project ADD COLUMN default_branch text;
-- The commits before this run's, newest first (git rev-list --first-parent), as the client saw.
ALTER TABLE run ADD COLUMN first_parents text[];

-- The detector states of a cell's duration series (docs/changes.md): kind 'test' (key: test
-- id), 'file' (key: path) or 'job' (key: ''). A snapshot of every series of the cell, as
-- packed arrays (little-endian; row i of each for kinds[i], keys[i]; the detector's window of
-- 120 runs right-aligned, durations NaN before a series' tail), plus a log of what each
-- upload since changed: an upload appends one small row instead of rewriting megabytes, and
-- the snapshot is rewritten every few uploads. `seq` orders the log; `token` tells a worker
-- whether the states it holds in memory are still the newest.
CREATE TABLE change_state (
    cell_id     bigint PRIMARY KEY REFERENCES cell(id) ON DELETE CASCADE,
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    seq         bigint NOT NULL,
    kinds       text[] NOT NULL,
    keys        text[] NOT NULL,
    count       bytea NOT NULL,
    anchor      bytea NOT NULL,
    durations   bytea NOT NULL,
    run_ids     bytea NOT NULL
);
-- Random float data does not compress: store it out of line without trying.
ALTER TABLE change_state ALTER COLUMN durations SET STORAGE EXTERNAL,
    ALTER COLUMN run_ids SET STORAGE EXTERNAL;

CREATE TABLE change_log (
    cell_id     bigint NOT NULL REFERENCES cell(id) ON DELETE CASCADE,
    seq         bigint NOT NULL,
    token       uuid NOT NULL,
    run_id      bigint NOT NULL,
    new_kinds   text[] NOT NULL,
    new_keys    text[] NOT NULL,
    -- The series rows the run's points went to (int64), their durations (float64), and the
    -- rows a change moved the anchor of, with the new anchors (int64).
    rows        bytea NOT NULL,
    durations   bytea NOT NULL,
    moved_rows  bytea NOT NULL,
    moved_to    bytea NOT NULL,
    PRIMARY KEY (cell_id, seq)
);

CREATE TABLE duration_change (
    id              bigserial PRIMARY KEY,
    project_id      bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    cell_id         bigint NOT NULL REFERENCES cell(id) ON DELETE CASCADE,
    kind            text NOT NULL,
    key             text NOT NULL,
    position        integer NOT NULL,
    run_id_before   bigint NOT NULL,
    run_id_after    bigint NOT NULL,
    confirmed_run_id bigint NOT NULL,
    commit_before   text,
    commit_after    text,
    at_before       timestamptz NOT NULL,
    at_after        timestamptz NOT NULL,
    runs_before     integer NOT NULL,
    runs_after      integer NOT NULL,
    median_before_s double precision NOT NULL,
    median_after_s  double precision NOT NULL,
    spread_before_s double precision NOT NULL,
    spread_after_s  double precision NOT NULL,
    noise           double precision NOT NULL,
    z               double precision NOT NULL,
    -- Commits strictly between commit_before and commit_after, oldest first, from the
    -- first-parent history the after run's client sent; NULL: not known.
    between_commits text[],
    between_complete boolean NOT NULL DEFAULT false,
    state           text NOT NULL DEFAULT 'open'
                    CHECK (state IN ('open', 'acknowledged', 'resolved')),
    state_at        timestamptz,
    detected_at     timestamptz NOT NULL DEFAULT now(),
    UNIQUE (cell_id, kind, key, position)
);
CREATE INDEX duration_change_project ON duration_change (project_id, at_after DESC);

-- Runs whose detection failed at ingest (the upload itself is stored): retried by the worker,
-- in run order per cell; a cell with a backlog queues its new runs here too.
CREATE TABLE change_backlog (
    run_id      bigint PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    cell_id     bigint NOT NULL,
    attempts    integer NOT NULL DEFAULT 0,
    error       text,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX change_backlog_cell ON change_backlog (cell_id, run_id);
"""
    )


def downgrade() -> None:
    op.execute(
        """
DROP TABLE change_backlog;
DROP TABLE duration_change;
DROP TABLE change_log;
DROP TABLE change_state;
ALTER TABLE run DROP COLUMN first_parents;
ALTER TABLE project DROP COLUMN default_branch;
"""
    )
