"""Retention: old results go by dropping whole daily partitions, never by row deletes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from sqlalchemy import Connection, text

from ingest.store import ALL_PROJECTS, DATA_CHANNEL


@dataclass(frozen=True)
class PruneReport:
    """What a prune removed (or would remove)."""

    partitions: list[str]
    runs: int
    rollup_rows: int
    uploads: int


def result_partitions(conn: Connection) -> list[tuple[str, date]]:
    """Every daily partition of test_result with its day."""
    rows = conn.execute(
        text(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
            "JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'test_result' "
            "ORDER BY c.relname"
        )
    ).all()
    return [(name, datetime.strptime(name[-8:], "%Y%m%d").date()) for (name,) in rows]


def prune_before(conn: Connection, cutoff: date, *, dry_run: bool = False) -> PruneReport:
    """Drop partitions, runs, rollups and finished raw uploads of days before `cutoff`."""
    doomed = [name for name, day in result_partitions(conn) if day < cutoff]
    counts = {
        "runs": "SELECT count(*) FROM run WHERE day < :c",
        "rollups": "SELECT (SELECT count(*) FROM rollup_daily WHERE day < :c) + "
        "(SELECT count(*) FROM rollup_file_daily WHERE day < :c)",
        "uploads": "SELECT count(*) FROM upload u JOIN run r ON r.id = u.run_id WHERE r.day < :c",
    }
    found = {k: int(conn.execute(text(q), {"c": cutoff}).scalar_one()) for k, q in counts.items()}
    if not dry_run:
        for name in doomed:
            conn.execute(text(f'DROP TABLE "{name}"'))
        conn.execute(text("DELETE FROM rollup_daily WHERE day < :c"), {"c": cutoff})
        conn.execute(text("DELETE FROM rollup_file_daily WHERE day < :c"), {"c": cutoff})
        # A week goes once all of it is older than the cutoff.
        for table in ("rollup_file_weekly", "rollup_test_weekly"):
            conn.execute(text(f"DELETE FROM {table} WHERE week < :c - 6"), {"c": cutoff})
        _resum_cell_weeks(conn, cutoff)
        conn.execute(
            text(
                "DELETE FROM upload u USING run r WHERE r.id = u.run_id AND r.day < :c "
                "AND u.status = 'done'"
            ),
            {"c": cutoff},
        )
        conn.execute(text("DELETE FROM run WHERE day < :c"), {"c": cutoff})
        conn.execute(
            text("SELECT pg_notify(:channel, :all)"),
            {"channel": DATA_CHANNEL, "all": ALL_PROJECTS},
        )
    return PruneReport(
        partitions=doomed,
        runs=found["runs"],
        rollup_rows=found["rollups"],
        uploads=found["uploads"],
    )


def _resum_cell_weeks(conn: Connection, cutoff: date) -> None:
    """Keep rollup_cell_weekly equal to the sum of rollup_daily: weeks before the cutoff go,
    and the week it falls in is summed again from its remaining days (readers take whole
    weeks from this table, so a week holding pruned days would count them)."""
    conn.execute(text("DELETE FROM rollup_cell_weekly WHERE week <= :c"), {"c": cutoff})
    conn.execute(
        text(
            """
            INSERT INTO rollup_cell_weekly (project_id, week, cell_id, test_id, runs, known,
                total_s, max_s, setup_s, call_s, teardown_s, failures, flaky, peak_rss_mib)
            SELECT project_id, date_trunc('week', day)::date, cell_id, test_id, sum(runs),
                sum(known), sum(total_s), max(max_s), sum(setup_s), sum(call_s),
                sum(teardown_s), sum(failures), sum(flaky), max(peak_rss_mib)
            FROM rollup_daily
            WHERE day >= :c AND day < date_trunc('week', CAST(:c AS date))::date + 7
            GROUP BY 1, 2, 3, 4
            """
        ),
        {"c": cutoff},
    )
