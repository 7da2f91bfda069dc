"""Quarantine that keeps history, and flaky statistics reset per test.

A quarantine entry is never deleted: removing one stamps `removed_at`, so the list of what
was quarantined when stays (a failure of a test quarantined at its run's start is a
quarantined failure). Expiry (`expires_at`) and release after N stable runs
(`release_after_runs`) are derived when read, from the clock and the results.

Revision ID: flaky
Revises: webhooks
Create Date: 2026-12-05
"""

from alembic import op

revision = "flaky"
down_revision = "exit_tail"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        """
CREATE TABLE quarantine (
    id                  bigserial PRIMARY KEY,
    project_id          bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    nodeid              text NOT NULL,
    reason              text NOT NULL DEFAULT '',
    created_at          timestamptz NOT NULL DEFAULT now(),
    expires_at          timestamptz,
    release_after_runs  integer CHECK (release_after_runs >= 1),
    removed_at          timestamptz
);
-- One open entry per test: adding a quarantined test again is a no-op, not a second row.
CREATE UNIQUE INDEX quarantine_open ON quarantine (project_id, nodeid) WHERE removed_at IS NULL;
CREATE TABLE flaky_reset (
    project_id  bigint NOT NULL REFERENCES project(id) ON DELETE CASCADE,
    nodeid      text NOT NULL,
    since       timestamptz NOT NULL,
    PRIMARY KEY (project_id, nodeid)
);
"""
    )


def downgrade() -> None:
    op.execute("DROP TABLE flaky_reset; DROP TABLE quarantine")
