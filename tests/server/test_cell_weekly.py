"""rollup_cell_weekly stays the sum of rollup_daily, and reads through it equal the daily sums."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

import pandas as pd
import psycopg
from sqlalchemy import Engine, text

from analysis.filters import Filters
from app.db.retention import prune_before
from app.db.rollup_reads import FactPart, load_fact_sums
from ingest.merge import merge_reports
from ingest.model import ParsedReport, results_frame
from ingest.store import RunMetadata, store_run
from tests.conftest import Database, ProjectFixture, compact_rollups

# Far in the past: prune drops every project's days before its cutoff, no other test's.
MONDAY = date(2020, 1, 6)
VALUES = "runs, known, total_s, max_s, setup_s, call_s, teardown_s, failures, flaky, peak_rss_mib"


def _store(database: Database, project: ProjectFixture, day: date, job: str, scale: float) -> None:
    report = ParsedReport(
        format="junit",
        results=results_frame(
            {
                "nodeid": ["a.py::t1", "a.py::t2", "b.py::t3"],
                "file": ["a.py", "a.py", "b.py"],
                "function": ["t1", "t2", "t3"],
                "outcome": ["passed", "failed", "passed"],
                # Binary fractions: sums are exact in any order.
                "duration_s": [0.5 * scale, 1.25 * scale, 2.0 * scale],
            }
        ),
    )
    with psycopg.connect(database.dsn) as conn:
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
            "RETURNING id",
            (project.id, f"{day}{job}{scale}".encode()),
        ).fetchone()[0]  # type: ignore[index]
        store_run(
            conn,
            project_id=project.id,
            upload_id=upload_id,
            meta=RunMetadata(job=job, started_at=datetime.combine(day, time(12), UTC)),
            merged=merge_reports([report]),
        )
        conn.commit()
    compact_rollups(database.dsn, project.id)


def _weekly_and_daily_sums(engine: Engine, project_id: int) -> tuple[list[object], list[object]]:
    with engine.connect() as conn:
        weekly = conn.execute(
            text(
                f"SELECT week, cell_id, test_id, {VALUES} FROM rollup_cell_weekly "
                "WHERE project_id = :p ORDER BY 1, 2, 3"
            ),
            {"p": project_id},
        ).all()
        daily = conn.execute(
            text(
                "SELECT date_trunc('week', day)::date, cell_id, test_id, sum(runs), sum(known), "
                "sum(total_s), max(max_s), sum(setup_s), sum(call_s), sum(teardown_s), "
                "sum(failures), sum(flaky), max(peak_rss_mib) FROM rollup_daily "
                "WHERE project_id = :p GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
            ),
            {"p": project_id},
        ).all()
    return [tuple(r) for r in weekly], [tuple(r) for r in daily]


def _daily_sums(engine: Engine, project_id: int, first: date, last: date) -> pd.DataFrame:
    with engine.connect() as conn:
        return pd.read_sql_query(
            text(
                "SELECT r.test_id, c.job, sum(r.known) AS known, sum(r.total_s) AS total_s "
                "FROM rollup_daily r JOIN cell c ON c.id = r.cell_id "
                "WHERE r.project_id = :p AND r.day BETWEEN :f AND :l GROUP BY 1, 2"
            ),
            conn,
            params={"p": project_id, "f": first, "l": last},
        )


def _read(engine: Engine, project_id: int, filters: Filters, part: FactPart | None) -> pd.DataFrame:
    with engine.connect() as conn:
        return load_fact_sums(
            conn, project_id, filters, split_by=("job",), part=part, per_bucket=False
        )


def _by_test_job(sums: pd.DataFrame) -> pd.DataFrame:
    sums = sums.astype({"job": str})
    grouped = sums.groupby(["test_id", "job"])[["known", "total_s"]].sum()
    return grouped.astype({"known": "int64"}).sort_index()


def test_weekly_cell_rollup_is_the_sum_of_the_daily_one_through_uploads_and_prune(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    # Three weeks, two jobs, a day with two runs, then a late upload for a settled old day.
    for offset, job, scale in (
        (0, "a", 1), (2, "a", 2), (2, "b", 3), (2, "b", 1), (7, "a", 4), (8, "b", 2),
        (13, "a", 1), (14, "a", 3), (16, "b", 5),
    ):  # fmt: skip
        _store(database, project, MONDAY + timedelta(days=offset), job, scale)
    _store(database, project, MONDAY + timedelta(days=1), "b", 7)
    weekly, daily = _weekly_and_daily_sums(engine, project.id)
    assert len(weekly) > 10
    assert weekly == daily

    # Reads with partial edge weeks (Wednesday to the next week's Tuesday and beyond) equal
    # the daily table's sums, whole and in settled/recent parts.
    first, last = MONDAY + timedelta(days=2), MONDAY + timedelta(days=15)
    filters = Filters(since=first, until=last)
    expected = _by_test_job(_daily_sums(engine, project.id, first, last))
    assert expected["known"].sum() == 3 * 7
    pd.testing.assert_frame_equal(_by_test_job(_read(engine, project.id, filters, None)), expected)
    for boundary in (MONDAY + timedelta(days=8), MONDAY + timedelta(days=14)):
        parts = [_read(engine, project.id, filters, FactPart(boundary, s)) for s in (True, False)]
        pd.testing.assert_frame_equal(_by_test_job(pd.concat(parts)), expected)

    # A cutoff inside the second week: its remaining days are summed again.
    with engine.begin() as conn:
        prune_before(conn, MONDAY + timedelta(days=8))
    weekly, daily = _weekly_and_daily_sums(engine, project.id)
    assert min(row[0] for row in weekly) == MONDAY + timedelta(days=7)  # type: ignore[type-var]
    assert weekly == daily
