"""Token expiry, the server secret that signs dashboard sessions, escaped labels keys.

Revision ID: security
Revises: 0001
Create Date: 2026-12-03
"""

import json

import sqlalchemy as sa
from alembic import op

revision = "security"
down_revision = "0001"
branch_labels = None
depends_on = None

SCHEMA = """
ALTER TABLE api_token ADD COLUMN expires_at timestamptz;

-- Secrets this server signs with (dashboard sessions, CSRF tokens): made once, shared by
-- every API process through the database.
CREATE TABLE server_secret (
    name        text PRIMARY KEY,
    value       bytea NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
"""

# A copy of model.frames.labels_key as of this revision: migrations must not change when
# the code does.
_ESCAPES = str.maketrans({"%": "%25", ",": "%2C", "=": "%3D"})


def _labels_key(labels: dict[str, str]) -> str:
    return ",".join(
        f"{k.translate(_ESCAPES)}={str(labels[k]).translate(_ESCAPES)}" for k in sorted(labels)
    )


# Only label sets holding "%", "," or "=" in a key or value have a new key.
_SPECIAL = (
    "EXISTS (SELECT 1 FROM jsonb_each_text(r.labels) e "
    "WHERE e.key ~ '[%,=]' OR e.value ~ '[%,=]')"
)


def upgrade() -> None:
    op.execute(SCHEMA)
    conn = op.get_bind()
    rows = conn.execute(sa.text(f"SELECT r.id, r.cell_id, r.labels::text FROM run r WHERE {_SPECIAL}"))
    cells: dict[int, str] = {}
    for run_id, cell_id, labels in rows.all():
        key = _labels_key(json.loads(labels))
        conn.execute(sa.text("UPDATE run SET labels_key = :k WHERE id = :i"), {"k": key, "i": run_id})
        cells[int(cell_id)] = key
    for cell_id, key in cells.items():
        # A cell whose new key another cell already holds keeps its old key (its rollups stay
        # readable; only an old ambiguous key could collide).
        conn.execute(
            sa.text(
                "UPDATE cell c SET labels_key = :k WHERE c.id = :i AND NOT EXISTS ("
                "SELECT 1 FROM cell o WHERE o.project_id = c.project_id AND o.job = c.job "
                "AND o.machine = c.machine AND o.branch = c.branch AND o.labels_key = :k)"
            ),
            {"k": key, "i": cell_id},
        )


def downgrade() -> None:
    op.execute("DROP TABLE server_secret; ALTER TABLE api_token DROP COLUMN expires_at")
