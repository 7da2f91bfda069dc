"""Initial schema: projects, tokens, uploads (the queue), runs, test dictionary, results, rollups.

Revision ID: 0001
Revises:
Create Date: 2026-12-02
"""

from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SCHEMA = """
CREATE TABLE project (
    id          bigserial PRIMARY KEY,
    slug        text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    name        text NOT NULL,
    public      boolean NOT NULL DEFAULT false,
    catalogue   text,
    catalogue_toml text,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_token (
    id          bigserial PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    scope       text NOT NULL CHECK (scope IN ('upload', 'read', 'admin')),
    token_hash  bytea NOT NULL UNIQUE,
    prefix      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- The upload row is the queue item: status moves queued -> processing -> done | failed.
CREATE TABLE upload (
    id              bigserial PRIMARY KEY,
    project_id      bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    status          text NOT NULL DEFAULT 'queued'
                    CHECK (status IN ('queued', 'processing', 'done', 'failed')),
    metadata        jsonb NOT NULL DEFAULT '{}'::jsonb,
    job             text NOT NULL DEFAULT '',
    content_hash    bytea NOT NULL,
    idempotency_key text,
    attempts        integer NOT NULL DEFAULT 0,
    error_code      text,
    error_detail    text,
    warnings        jsonb NOT NULL DEFAULT '[]'::jsonb,
    counts          jsonb NOT NULL DEFAULT '{}'::jsonb,
    run_id          bigint,
    size_bytes      bigint NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL DEFAULT now(),
    finished_at     timestamptz
);
CREATE UNIQUE INDEX upload_idempotency ON upload (project_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX upload_content ON upload (project_id, job, content_hash);
CREATE INDEX upload_queued ON upload (id) WHERE status IN ('queued', 'processing');
CREATE INDEX upload_project_recent ON upload (project_id, id DESC);

-- One row per claim of an upload. Written on a side connection, so the count survives a
-- worker killed mid-ingest; its foreign key only takes a KEY SHARE lock, which the claim's
-- FOR NO KEY UPDATE lock allows.
CREATE TABLE upload_attempt (
    id          bigserial PRIMARY KEY,
    upload_id   bigint NOT NULL REFERENCES upload(id) ON DELETE CASCADE,
    worker      text NOT NULL,
    started_at  timestamptz NOT NULL DEFAULT now(),
    error       text
);
CREATE INDEX upload_attempt_upload ON upload_attempt (upload_id);

CREATE TABLE upload_file (
    upload_id   bigint NOT NULL REFERENCES upload(id) ON DELETE CASCADE,
    position    integer NOT NULL,
    filename    text NOT NULL,
    format      text,
    raw_gzip    bytea NOT NULL,
    size_bytes  bigint NOT NULL,
    PRIMARY KEY (upload_id, position)
);

-- A run cell: one job on one machine type, branch and label set. Rollups key on its id.
CREATE TABLE cell (
    id          bigserial PRIMARY KEY,
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    job         text NOT NULL,
    machine     text NOT NULL DEFAULT '',
    branch      text NOT NULL DEFAULT '',
    labels_key  text NOT NULL DEFAULT '',
    UNIQUE (project_id, job, machine, branch, labels_key)
);

CREATE TABLE run (
    id            bigserial PRIMARY KEY,
    project_id    bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    upload_id     bigint NOT NULL,
    cell_id       bigint NOT NULL REFERENCES cell(id),
    pipeline      text,
    job           text NOT NULL,
    commit_sha    text,
    branch        text,
    machine       text,
    labels        jsonb NOT NULL DEFAULT '{}'::jsonb,
    labels_key    text NOT NULL DEFAULT '',
    started_at    timestamptz NOT NULL,
    day           date NOT NULL,
    wall_s        double precision,
    test_s        double precision NOT NULL DEFAULT 0,
    tests         integer NOT NULL DEFAULT 0,
    peak_rss_mib  double precision,
    xdist_workers integer NOT NULL DEFAULT 1,
    partial       boolean NOT NULL DEFAULT false,
    hidden_rows   integer NOT NULL DEFAULT 0,
    missing       integer NOT NULL DEFAULT 0
);
CREATE INDEX run_project_day ON run (project_id, day);
CREATE INDEX run_pipeline ON run (project_id, pipeline);

-- Test identity is deterministic (a hash of project and nodeid), so every worker computes
-- the same id without a round trip.
CREATE TABLE test_case (
    id           bigint PRIMARY KEY,
    project_id   bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    nodeid       text NOT NULL,
    file         text,
    classname    text,
    function     text NOT NULL,
    params       text,
    param_values jsonb,
    markers      text[],
    first_seen   date NOT NULL,
    UNIQUE (project_id, nodeid)
);

CREATE TABLE test_result (
    project_id   bigint NOT NULL,
    day          date NOT NULL,
    run_id       bigint NOT NULL,
    test_id      bigint NOT NULL,
    outcome      text NOT NULL,
    duration_s   double precision,
    setup_s      double precision,
    call_s       double precision,
    teardown_s   double precision,
    attempts     smallint NOT NULL DEFAULT 1,
    flaky        boolean NOT NULL DEFAULT false,
    peak_rss_mib real,
    worker       text,
    message      text
) PARTITION BY RANGE (day);
CREATE INDEX test_result_test ON test_result (test_id);

-- Additive daily facts per (day, run cell, test): what dashboards and rollups read.
CREATE TABLE rollup_daily (
    project_id   bigint NOT NULL,
    day          date NOT NULL,
    cell_id      bigint NOT NULL,
    test_id      bigint NOT NULL,
    runs         integer NOT NULL,
    known        integer NOT NULL,
    total_s      double precision NOT NULL,
    max_s        double precision,
    setup_s      double precision,
    call_s       double precision,
    teardown_s   double precision,
    failures     integer NOT NULL,
    flaky        integer NOT NULL,
    peak_rss_mib real,
    PRIMARY KEY (project_id, day, cell_id, test_id)
);

-- The same facts per (day, run cell, file): small enough for every dashboard query.
CREATE TABLE rollup_file_daily (
    project_id   bigint NOT NULL,
    day          date NOT NULL,
    cell_id      bigint NOT NULL,
    file         text NOT NULL,
    tests        integer NOT NULL,  -- the most tests of this file one run executed
    runs         integer NOT NULL,
    known        integer NOT NULL,
    total_s      double precision NOT NULL,
    max_s        double precision,
    setup_s      double precision,
    call_s       double precision,
    teardown_s   double precision,
    failures     integer NOT NULL,
    flaky        integer NOT NULL,
    peak_rss_mib real,
    PRIMARY KEY (project_id, day, cell_id, file)
);

-- Weekly levels of the same facts, so windows of weeks read a seventh of the rows: per file
-- and cell, and per test across all cells (the per-test questions without a job/label filter).
CREATE TABLE rollup_file_weekly (LIKE rollup_file_daily INCLUDING ALL);
ALTER TABLE rollup_file_weekly RENAME COLUMN day TO week;

CREATE TABLE rollup_test_weekly (
    project_id   bigint NOT NULL,
    week         date NOT NULL,
    test_id      bigint NOT NULL,
    runs         integer NOT NULL,
    known        integer NOT NULL,
    total_s      double precision NOT NULL,
    max_s        double precision,
    setup_s      double precision,
    call_s       double precision,
    teardown_s   double precision,
    failures     integer NOT NULL,
    flaky        integer NOT NULL,
    peak_rss_mib real,
    PRIMARY KEY (project_id, week, test_id)
) WITH (fillfactor = 40);
-- Every run of the week updates the same rows: free room on each page keeps those updates HOT
-- (no new index entries, dead versions pruned in place), half the upsert time, a smaller table.
"""


def upgrade() -> None:
    op.execute(SCHEMA)


def downgrade() -> None:
    op.execute(
        "DROP TABLE rollup_test_weekly, rollup_file_weekly, rollup_file_daily, rollup_daily, test_result, test_case, run, cell, "
        "upload_file, upload_attempt, upload, api_token, project CASCADE"
    )
