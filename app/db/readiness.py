"""Whether this deployment can do its job: database reachable, schema current, a worker alive."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError


@dataclass(frozen=True)
class Check:
    """One readiness check: passed or not, and why."""

    ok: bool
    detail: str


@dataclass(frozen=True)
class Readiness:
    """Every check by name; ready when all pass."""

    checks: dict[str, Check] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        """All checks passed."""
        return all(c.ok for c in self.checks.values())

    @property
    def failing(self) -> list[str]:
        """Names of the checks that failed."""
        return [name for name, c in self.checks.items() if not c.ok]


@functools.cache
def migration_heads() -> frozenset[str]:
    """The head revisions of the migrations this code ships (read once per process)."""
    from alembic.script import ScriptDirectory

    from app.db.engine import alembic_config

    return frozenset(ScriptDirectory.from_config(alembic_config("")).get_heads())


def check_readiness(engine: Engine, *, max_heartbeat_age_s: float) -> Readiness:
    """Run the checks; a database that does not answer fails all three (the others need it)."""
    try:
        with engine.connect() as conn:
            # An overloaded or half-dead server must not hang the probe.
            conn.execute(text("SET statement_timeout = 2000"))
            current = frozenset(
                row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))
            )
            age = conn.execute(
                text(
                    "SELECT extract(epoch FROM clock_timestamp() - max(seen_at)) "
                    "FROM worker_heartbeat WHERE state <> 'lost'"
                )
            ).scalar_one_or_none()
            conn.rollback()
    except SQLAlchemyError as exc:
        reason = str(getattr(exc, "orig", exc) or exc).strip().splitlines()
        down = Check(False, f"database unreachable: {reason[0] if reason else type(exc).__name__}")
        return Readiness({"database": down, "migrations": down, "worker": down})
    heads = migration_heads()
    schema = (
        Check(True, f"at {', '.join(sorted(current))}")
        if current == heads
        else Check(
            False,
            f"database at {', '.join(sorted(current)) or 'nothing'}, code expects "
            f"{', '.join(sorted(heads))}: run `laptime migrate`",
        )
    )
    if age is None:
        worker = Check(False, "no worker has ever reported: start `laptime worker`")
    elif float(age) > max_heartbeat_age_s:
        worker = Check(
            False, f"last worker heartbeat {float(age):.0f} s ago (limit {max_heartbeat_age_s:g} s)"
        )
    else:
        worker = Check(True, f"last worker heartbeat {float(age):.1f} s ago")
    return Readiness({"database": Check(True, "reachable"), "migrations": schema, "worker": worker})
