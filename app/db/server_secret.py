"""The server's signing secret, made once and kept in the database for every API process."""

from __future__ import annotations

import secrets

from sqlalchemy import Connection, text

SECRET_BYTES = 32


def server_secret(conn: Connection, name: str = "session") -> bytes:
    """The secret called `name`, created on first use (concurrent first uses agree).

    Read first: the migrations make the session secret, so a read replica (where even a no-op
    INSERT fails) finds it without writing."""
    query = text("SELECT value FROM server_secret WHERE name = :n")
    value = conn.execute(query, {"n": name}).scalar_one_or_none()
    if value is None:
        conn.execute(
            text("INSERT INTO server_secret (name, value) VALUES (:n, :v) ON CONFLICT DO NOTHING"),
            {"n": name, "v": secrets.token_bytes(SECRET_BYTES)},
        )
        value = conn.execute(query, {"n": name}).scalar_one()
    return bytes(value)
