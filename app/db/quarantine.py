"""The quarantine and flaky-reset tables: entries added, removed (stamped, never deleted), read."""

from __future__ import annotations

from datetime import datetime

import pandas as pd
from psycopg import sql
from sqlalchemy import Connection, text

from analysis.flaky.quarantine import QuarantineEntry
from app.db.copy_frames import read_frame

_COLUMNS = "id, nodeid, reason, created_at, expires_at, release_after_runs, removed_at"


def load_quarantine(conn: Connection, project_id: int) -> list[QuarantineEntry]:
    """Every quarantine entry of the project, oldest first (removed ones too)."""
    rows = conn.execute(
        text(f"SELECT {_COLUMNS} FROM quarantine WHERE project_id = :p ORDER BY id"),
        {"p": project_id},
    ).mappings()
    return [QuarantineEntry(**dict(row)) for row in rows]


def add_quarantine(
    conn: Connection,
    project_id: int,
    nodeid: str,
    *,
    reason: str,
    expires_at: datetime | None,
    release_after_runs: int | None,
) -> tuple[QuarantineEntry, bool]:
    """The open entry of `nodeid`, added now unless one is open (then True: it existed)."""
    row = (
        conn.execute(
            text(
                f"""
                INSERT INTO quarantine (project_id, nodeid, reason, expires_at, release_after_runs)
                VALUES (:p, :n, :r, :e, :k)
                ON CONFLICT (project_id, nodeid) WHERE removed_at IS NULL DO NOTHING
                RETURNING {_COLUMNS}
                """
            ),
            {"p": project_id, "n": nodeid, "r": reason, "e": expires_at, "k": release_after_runs},
        )
        .mappings()
        .first()
    )
    if row is not None:
        return QuarantineEntry(**dict(row)), False
    existing = (
        conn.execute(
            text(
                f"SELECT {_COLUMNS} FROM quarantine "
                "WHERE project_id = :p AND nodeid = :n AND removed_at IS NULL"
            ),
            {"p": project_id, "n": nodeid},
        )
        .mappings()
        .one()
    )
    return QuarantineEntry(**dict(existing)), True


def remove_quarantine(conn: Connection, project_id: int, nodeid: str) -> bool:
    """Stamp the open entry of `nodeid` removed; False when none was open."""
    result = conn.execute(
        text(
            "UPDATE quarantine SET removed_at = now() "
            "WHERE project_id = :p AND nodeid = :n AND removed_at IS NULL"
        ),
        {"p": project_id, "n": nodeid},
    )
    return bool(result.rowcount)


def load_flaky_resets(conn: Connection, project_id: int) -> dict[str, datetime]:
    """Per test, when its flaky statistics restart."""
    rows = conn.execute(
        text("SELECT nodeid, since FROM flaky_reset WHERE project_id = :p"), {"p": project_id}
    ).all()
    return {str(nodeid): since for nodeid, since in rows}


def set_flaky_reset(conn: Connection, project_id: int, nodeid: str, since: datetime) -> None:
    """Restart `nodeid`'s flaky statistics at `since` (replacing an earlier reset)."""
    conn.execute(
        text(
            "INSERT INTO flaky_reset (project_id, nodeid, since) VALUES (:p, :n, :s) "
            "ON CONFLICT (project_id, nodeid) DO UPDATE SET since = EXCLUDED.since"
        ),
        {"p": project_id, "n": nodeid, "s": since},
    )


def load_quarantine_results(
    conn: Connection, project_id: int, nodeids: list[str], since: datetime
) -> pd.DataFrame:
    """Results of these tests in runs started since `since`: nodeid, started_at, outcome,
    flaky (what quarantine states are derived from)."""
    frame = read_frame(
        conn,
        sql.SQL(
            """
            SELECT tc.nodeid, r.started_at, tr.outcome, tr.flaky
            FROM test_case tc
            JOIN test_result tr ON tr.project_id = tc.project_id AND tr.test_id = tc.id
            JOIN run r ON r.id = tr.run_id AND r.day = tr.day
            WHERE tc.project_id = %(p)s AND tc.nodeid = ANY(%(n)s) AND tr.day >= %(day)s
                AND r.started_at >= %(since)s
            """
        ).format(),
        {"p": project_id, "n": nodeids, "day": since.date(), "since": since},
    )
    frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True)
    frame["flaky"] = frame["flaky"].astype(bool)
    return frame
