"""The weekly rollups a digest reads: per (week, test) and per (week, file), summed over cells."""

from __future__ import annotations

from datetime import date

import pandas as pd
from sqlalchemy import Connection, text

from analysis.digest.weekly import COLUMNS


def _frame(conn: Connection, query: str, project_id: int, weeks: list[date]) -> pd.DataFrame:
    rows = conn.execute(text(query), {"project": project_id, "weeks": weeks}).all()
    frame = pd.DataFrame([tuple(r) for r in rows], columns=list(COLUMNS))
    return frame.astype({"runs": "int64", "known": "int64", "total_s": "float64"})


def weekly_test_sums(conn: Connection, project_id: int, weeks: list[date]) -> pd.DataFrame:
    """One row per (week, nodeid) of these weeks: runs, known, total_s."""
    return _frame(
        conn,
        """
        SELECT r.week, t.nodeid AS name, r.runs, r.known, r.total_s
        FROM rollup_test_weekly r JOIN test_case t ON t.id = r.test_id
        WHERE r.project_id = :project AND r.week = ANY(:weeks)
        """,
        project_id,
        weeks,
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
