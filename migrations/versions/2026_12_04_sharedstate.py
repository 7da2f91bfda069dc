"""Shared state: what every web process must see alike lives in the database
(docs/scaling.md#what-the-web-processes-share-and-what-each-keeps).

- auth_failure: failed authentications per client address in a fixed window, so the budget
  (LAPTIME_AUTH_FAILURES per LAPTIME_AUTH_FAILURE_WINDOW_S) holds for the deployment, not per
  process. Rows older than a window are deleted as failures are counted.
- test_case_version: a counter per project bumped by statement triggers on test_case, in the
  transaction that writes or deletes the rows (ingest, an operator's delete, a project's
  removal), so the tests' data version is one primary-key read instead of a scan.

Revision ID: sharedstate
Revises: platform
Create Date: 2026-12-04
"""

from alembic import op

revision = "sharedstate"
down_revision = "platform"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
CREATE TABLE auth_failure (
    client       text PRIMARY KEY,
    window_start timestamptz NOT NULL,
    failures     integer NOT NULL
);
CREATE INDEX ix_auth_failure_window_start ON auth_failure (window_start);

CREATE TABLE test_case_version (
    project_id bigint PRIMARY KEY REFERENCES project(id) ON DELETE CASCADE,
    version    bigint NOT NULL
);

-- One bump per statement and project, whatever the number of rows: an ingest's upsert of
-- 100,000 tests costs one row update. Projects being deleted in the same statement (the
-- cascade) are skipped by the join, so no row refers to a project that is gone.
CREATE FUNCTION bump_test_case_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO test_case_version AS v (project_id, version)
        SELECT p.id, 1 FROM project p WHERE p.id IN (SELECT project_id FROM old_rows)
        ON CONFLICT (project_id) DO UPDATE SET version = v.version + 1;
    ELSE
        INSERT INTO test_case_version AS v (project_id, version)
        SELECT p.id, 1 FROM project p WHERE p.id IN (SELECT project_id FROM new_rows)
        ON CONFLICT (project_id) DO UPDATE SET version = v.version + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER test_case_version_insert AFTER INSERT ON test_case
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bump_test_case_version();
CREATE TRIGGER test_case_version_update AFTER UPDATE ON test_case
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bump_test_case_version();
CREATE TRIGGER test_case_version_delete AFTER DELETE ON test_case
    REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION bump_test_case_version();
"""
    )


def downgrade() -> None:
    op.execute(
        """
DROP TRIGGER test_case_version_delete ON test_case;
DROP TRIGGER test_case_version_update ON test_case;
DROP TRIGGER test_case_version_insert ON test_case;
DROP FUNCTION bump_test_case_version();
DROP TABLE test_case_version;
DROP TABLE auth_failure;
"""
    )
