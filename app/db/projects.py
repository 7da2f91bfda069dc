"""Projects and their API tokens (only a hash of each token is stored)."""

from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from app.project_records import (
    SCOPES,
    Project,
    ProjectError,
    TokenGrant,
    TokenInfo,
)

# Names show in every page's header and menus: long enough for any real name, short enough
# not to break the layout. Slugs match the database CHECK (63 characters).
MAX_PROJECT_NAME = 100
MAX_SLUG = 63
# The database's CHECK on project.slug: a path that cannot be a slug names no project, so it
# is answered without a query (a NUL byte would otherwise reach Postgres and fail there).
SLUG_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")


def check_project_name(name: str) -> str:
    """The name stripped, or ProjectError when it is empty, too long or not printable."""
    name = name.strip()
    if not name or len(name) > MAX_PROJECT_NAME or not name.isprintable():
        raise ProjectError(f"a project name must be 1 to {MAX_PROJECT_NAME} printable characters")
    return name


def slugify(name: str) -> str:
    """A URL-safe project slug from a human name."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", name.strip().lower()).strip("-")
    if not slug:
        raise ProjectError(f"cannot make a project slug from {name!r}")
    return slug[:MAX_SLUG]


def hash_token(token: str) -> bytes:
    """SHA-256 of the token: tokens are long random strings, so no salt or KDF is needed."""
    return hashlib.sha256(token.encode()).digest()


_PROJECT_COLUMNS = "id, slug, name, public, catalogue, catalogue_toml"


def create_project(conn: Connection, name: str, *, public: bool = False) -> Project:
    """Insert a project; the slug is derived from the name and must be new."""
    name = check_project_name(name)
    slug = slugify(name)
    exists = conn.execute(text("SELECT 1 FROM project WHERE slug = :s"), {"s": slug}).first()
    if exists:
        raise ProjectError(f"project {slug!r} already exists")
    row = conn.execute(
        text(
            f"INSERT INTO project (slug, name, public) VALUES (:s, :n, :p) "
            f"RETURNING {_PROJECT_COLUMNS}"
        ),
        {"s": slug, "n": name, "p": public},
    ).one()
    return Project(*row)


def get_project(conn: Connection, slug: str) -> Project | None:
    """The project with this slug, or None."""
    if not SLUG_PATTERN.fullmatch(slug):
        return None
    row = conn.execute(
        text(f"SELECT {_PROJECT_COLUMNS} FROM project WHERE slug = :s"), {"s": slug}
    ).first()
    return Project(*row) if row else None


def list_projects(conn: Connection) -> list[Project]:
    """Every project, by slug."""
    rows = conn.execute(text(f"SELECT {_PROJECT_COLUMNS} FROM project ORDER BY slug")).all()
    return [Project(*r) for r in rows]


def create_token(
    conn: Connection, project: Project, scope: str, *, expires_at: datetime | None = None
) -> str:
    """Create a token and return it; only its hash is kept, so this is the one chance to see it."""
    return issue_token(conn, project, scope, expires_at=expires_at)[1]


def issue_token(
    conn: Connection, project: Project, scope: str, *, expires_at: datetime | None = None
) -> tuple[TokenInfo, str]:
    """Create a token: its listing and its secret (shown this once, never stored)."""
    if scope not in SCOPES:
        raise ProjectError(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")
    token = f"lt_{scope}_{secrets.token_urlsafe(32)}"
    row = conn.execute(
        text(
            "INSERT INTO api_token (project_id, scope, token_hash, prefix, expires_at) "
            "VALUES (:p, :s, :h, :x, :e) RETURNING id, created_at"
        ),
        {"p": project.id, "s": scope, "h": hash_token(token), "x": token[:12], "e": expires_at},
    ).one()
    info = TokenInfo(row[0], project.slug, scope, token[:12], row[1], expires_at, None)
    return info, token


_GRANT_SELECT = (
    f"SELECT t.id, t.scope, {', '.join('p.' + c for c in _PROJECT_COLUMNS.split(', '))} "
    "FROM api_token t JOIN project p ON p.id = t.project_id "
    # Checked on every request (no cache): revoking or expiring takes effect at once.
    "WHERE t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()) AND "
)


def _grant(row: Any) -> TokenGrant | None:
    if row is None:
        return None
    return TokenGrant(project=Project(*row[2:]), scope=row[1], token_id=int(row[0]))


def resolve_token(conn: Connection, token: str) -> TokenGrant | None:
    """The grant behind a presented token, or None when it is unknown, revoked or expired."""
    row = conn.execute(text(_GRANT_SELECT + "t.token_hash = :h"), {"h": hash_token(token)})
    return _grant(row.first())


def grant_of_token_id(conn: Connection, token_id: int) -> TokenGrant | None:
    """The grant of a token by id (a signed-in session names its token), None when gone."""
    row = conn.execute(text(_GRANT_SELECT + "t.id = :i"), {"i": token_id})
    return _grant(row.first())


def list_tokens(conn: Connection, project: Project) -> list[TokenInfo]:
    """A project's tokens, newest first, without their secrets."""
    rows = conn.execute(
        text(
            "SELECT id, scope, prefix, created_at, expires_at, revoked_at FROM api_token "
            "WHERE project_id = :p ORDER BY id DESC"
        ),
        {"p": project.id},
    ).all()
    return [TokenInfo(r[0], project.slug, r[1], r[2], r[3], r[4], r[5]) for r in rows]


def revoke_token(conn: Connection, project: Project, token_id: int) -> bool:
    """Revoke one token of the project; False when the project has no such active token."""
    row = conn.execute(
        text(
            "UPDATE api_token SET revoked_at = now() "
            "WHERE id = :i AND project_id = :p AND revoked_at IS NULL RETURNING id"
        ),
        {"i": token_id, "p": project.id},
    ).first()
    return row is not None


def set_catalogue(
    conn: Connection, project: Project, name: str | None, toml_text: str | None
) -> None:
    """Store which machine catalogue a project uses, and its own catalogue text if any."""
    conn.execute(
        text("UPDATE project SET catalogue = :c, catalogue_toml = :t WHERE id = :p"),
        {"c": name, "t": toml_text, "p": project.id},
    )
