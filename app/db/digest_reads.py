"""The weekly rollups a digest reads: per (week, test) and per (week, file), summed over cells."""

from __future__ import annotations

from datetime import date
from typing import Any

import pandas as pd
from sqlalchemy import Connection, text

from analysis.digest.weekly import COLUMNS
from app.db.rollup_reads import pending_runs
from ingest.rollup_compaction import pending_facts


def _frame(
    conn: Connection, query: str, project_id: int, weeks: list[date], **params: Any
) -> pd.DataFrame:
    rows = conn.execute(text(query), {"project": project_id, "weeks": weeks, **params}).all()
    frame = pd.DataFrame([tuple(r) for r in rows], columns=list(COLUMNS))
    return frame.astype({"runs": "int64", "known": "int64", "total_s": "float64"})


def weekly_test_sums(conn: Connection, project_id: int, weeks: list[date]) -> pd.DataFrame:
    """One row per (week, nodeid) of these weeks: runs, known, total_s."""
    pending = pending_runs(conn, project_id)
    return _frame(
        conn,
        """
        SELECT r.week, t.nodeid AS name, sum(r.runs)::int8, sum(r.known)::int8, sum(r.total_s)
        FROM (
            SELECT week, test_id, runs, known, total_s FROM rollup_test_weekly
            WHERE project_id = :project AND week = ANY(:weeks)
            UNION ALL
            -- Results not in the rollup yet (ingest.rollup_compaction).
            SELECT week, test_id, runs, known, total_s FROM ("""
        + pending_facts(
            "CAST(:runs AS bigint[])", "CAST(:days AS date[])", "CAST(:cells AS bigint[])"
        )
        + """) p
            WHERE week = ANY(:weeks)
        ) r JOIN test_case t ON t.id = r.test_id
        GROUP BY r.week, t.nodeid
        """,
        project_id,
        weeks,
        runs=list(pending.ids),
        days=list(pending.days),
        cells=list(pending.cells),
    )


def weekly_file_sums(conn: Connection, project_id: int, weeks: list[date]) -> pd.DataFrame:
    """One row per (week, file) of these weeks, every cell summed."""
    return _frame(
        conn,
        """
        SELECT week, file AS name, sum(runs)::int8, sum(known)::int8, sum(total_s)
        FROM rollup_file_weekly
        WHERE project_id = :project AND week = ANY(:weeks)
        GROUP BY week, file
        """,
        project_id,
        weeks,
    )
