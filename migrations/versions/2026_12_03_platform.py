"""Platform: per run the platform the tests ran on (the plugin's session
`platform`, e.g. `Linux-6.1.0-x86_64-with-glibc2.36`; NULL = unknown), so machine sizing keeps
to the history's OS and architecture when today's machine type is not named.

Revision ID: platform
Revises: malloc
Create Date: 2026-12-03
"""

from alembic import op

revision = "platform"
down_revision = "malloc"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # NULL for every existing run (no rewrite): older reports did not say.
    op.execute("ALTER TABLE run ADD COLUMN platform text")


def downgrade() -> None:
    op.execute("ALTER TABLE run DROP COLUMN platform")
