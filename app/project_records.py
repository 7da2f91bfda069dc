"""What a project and a token grant are: the records every layer of the app passes around.

They sit below the database layer that fills them, so that the edges can name them without
importing that layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
    token_id: int

    def allows(self, action: str) -> bool:
        """True when this token's scope includes `action`."""
        return action in SCOPE_GRANTS[self.scope]


@dataclass(frozen=True)
class TokenInfo:
    """A token as listed to an admin: everything but the secret (only its first characters)."""

    id: int
    project: str
    scope: str
    prefix: str
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    @property
    def active(self) -> bool:
        """Neither revoked nor expired, now."""
        return self.revoked_at is None and (
            self.expires_at is None or self.expires_at > datetime.now(self.created_at.tzinfo)
        )
