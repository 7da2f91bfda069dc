"""Projects and their API tokens (only a hash of each token is stored)."""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass

from sqlalchemy import Connection, text

SCOPES = ("upload", "read", "admin")
# What each scope may do: an admin token can do everything, an upload token may also read
# the status of its own uploads.
SCOPE_GRANTS: dict[str, frozenset[str]] = {
    "upload": frozenset({"upload"}),
    "read": frozenset({"read"}),
    "admin": frozenset({"upload", "read", "admin"}),
}


class ProjectError(ValueError):
    """A project or token operation that cannot be done, with a message for the user."""


@dataclass(frozen=True)
class Project:
    """A project row."""

    id: int
    slug: str
    name: str
    public: bool
    catalogue: str | None
    catalogue_toml: str | None


@dataclass(frozen=True)
class TokenGrant:
    """What a presented token allows."""

    project: Project
    scope: str

    def allows(self, action: str) -> bool:
        """True when this token's scope includes `action`."""
        return action in SCOPE_GRANTS[self.scope]


def slugify(name: str) -> str:
    """A URL-safe project slug from a human name."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", name.strip().lower()).strip("-")
    if not slug:
        raise ProjectError(f"cannot make a project slug from {name!r}")
    return slug[:63]


def hash_token(token: str) -> bytes:
    """SHA-256 of the token: tokens are long random strings, so no salt or KDF is needed."""
    return hashlib.sha256(token.encode()).digest()


_PROJECT_COLUMNS = "id, slug, name, public, catalogue, catalogue_toml"


def create_project(conn: Connection, name: str, *, public: bool = False) -> Project:
    """Insert a project; the slug is derived from the name and must be new."""
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
    row = conn.execute(
        text(f"SELECT {_PROJECT_COLUMNS} FROM project WHERE slug = :s"), {"s": slug}
    ).first()
    return Project(*row) if row else None


def list_projects(conn: Connection) -> list[Project]:
    """Every project, by slug."""
    rows = conn.execute(text(f"SELECT {_PROJECT_COLUMNS} FROM project ORDER BY slug")).all()
    return [Project(*r) for r in rows]


def create_token(conn: Connection, project: Project, scope: str) -> str:
    """Create a token and return it; only its hash is kept, so this is the one chance to see it."""
    if scope not in SCOPES:
        raise ProjectError(f"unknown scope {scope!r}: use one of {', '.join(SCOPES)}")
    token = f"lt_{scope}_{secrets.token_urlsafe(32)}"
    conn.execute(
        text(
            "INSERT INTO api_token (project_id, scope, token_hash, prefix) VALUES (:p, :s, :h, :x)"
        ),
        {"p": project.id, "s": scope, "h": hash_token(token), "x": token[:12]},
    )
    return token


def resolve_token(conn: Connection, token: str) -> TokenGrant | None:
    """The grant behind a presented token, or None when it is unknown or revoked."""
    row = conn.execute(
        text(
            f"SELECT t.scope, {', '.join('p.' + c for c in _PROJECT_COLUMNS.split(', '))} "
            "FROM api_token t JOIN project p ON p.id = t.project_id "
            "WHERE t.token_hash = :h AND t.revoked_at IS NULL"
        ),
        {"h": hash_token(token)},
    ).first()
    if row is None:
        return None
    return TokenGrant(project=Project(*row[1:]), scope=row[0])


def set_catalogue(
    conn: Connection, project: Project, name: str | None, toml_text: str | None
) -> None:
    """Store which machine catalogue a project uses, and its own catalogue text if any."""
    conn.execute(
        text("UPDATE project SET catalogue = :c, catalogue_toml = :t WHERE id = :p"),
        {"c": name, "t": toml_text, "p": project.id},
    )
