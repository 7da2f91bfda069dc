"""Reads of the rollup tables: per-test fact sums by day or whole week, and per-file facts.

The day/week switch lives here: windows of WEEKLY_AFTER_DAYS or more read the weekly tables
(tests/server/test_cell_weekly.py checks they equal the daily sums).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
from psycopg import sql
from sqlalchemy import Connection, text

from analysis.filters import Filters
from app.db.copy_frames import copy_frame, copy_numeric_frame
from app.db.repository import cell_where, narrow_tests
from ingest.rollup_compaction import PER_TEST_KEYS, pending_facts
from ingest.store import ROLLUP_VALUES
from model.frames import FACT_COLUMNS
from pgcodec.binary_copy import PgType

WEEKLY_AFTER_DAYS = 14
_CELL_COLUMNS = ("job", "machine", "branch", "labels_key")


def _long_window(filters: Filters) -> bool:
    """Windows of WEEKLY_AFTER_DAYS or more read the weekly rollups (whole weeks)."""
    if filters.since is None:
        return True
    return ((filters.until or datetime.now(UTC).date()) - filters.since).days >= WEEKLY_AFTER_DAYS


def _weekly(filters: Filters) -> Filters:
    """The same filters with the window widened to whole weeks (weekly rows start on Monday)."""
    if filters.since is None:
        return filters
    return replace(filters, since=filters.since - timedelta(days=filters.since.weekday()))


# Unknown floats travel as NaN, so every column is fixed-width and non-NULL (see
# copy_numeric_frame); pandas reads NaN as missing either way.
_ROLLUP_SUMS = sql.SQL("""
    sum(r.runs)::bigint AS runs, sum(r.known)::bigint AS known,
    sum(r.total_s) AS total_s, coalesce(max(r.max_s), 'NaN') AS max_s,
    coalesce(sum(r.setup_s), 'NaN') AS setup_s, coalesce(sum(r.call_s), 'NaN') AS call_s,
    coalesce(sum(r.teardown_s), 'NaN') AS teardown_s,
    sum(r.failures)::bigint AS failures, sum(r.flaky)::bigint AS flaky,
    coalesce(max(r.peak_rss_mib)::float8, 'NaN') AS peak_rss_mib
""")
_ROLLUP_AS_IS = sql.SQL("""
    r.runs::bigint, r.known::bigint, r.total_s, coalesce(r.max_s, 'NaN') AS max_s,
    coalesce(r.setup_s, 'NaN') AS setup_s, coalesce(r.call_s, 'NaN') AS call_s,
    coalesce(r.teardown_s, 'NaN') AS teardown_s, r.failures::bigint, r.flaky::bigint,
    coalesce(r.peak_rss_mib::float8, 'NaN') AS peak_rss_mib
""")
_FACT_SUMS_SPEC: tuple[tuple[str, PgType], ...] = (
    ("test_id", "int8"),
    ("day", "date"),
    ("runs", "int8"),
    ("known", "int8"),
    ("total_s", "float8"),
    ("max_s", "float8"),
    ("setup_s", "float8"),
    ("call_s", "float8"),
    ("teardown_s", "float8"),
    ("failures", "int8"),
    ("flaky", "int8"),
    ("peak_rss_mib", "float8"),
)


@dataclass(frozen=True)
class PendingRuns:
    """A project's runs not in the per-test rollups yet (ingest.rollup_compaction): their ids,
    cells and distinct days, sent with a read that adds their results."""

    ids: tuple[int, ...] = ()
    cells: tuple[int, ...] = ()
    days: tuple[date, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.ids)

    def params(self) -> dict[str, Any]:
        """The parameters per_test_rollup's SQL names."""
        return {
            "pending_runs": list(self.ids),
            "pending_cells": list(self.cells),
            "pending_days": list(self.days),
        }


def pending_runs(conn: Connection, project_id: int) -> PendingRuns:
    """The project's runs not compacted yet (none, mostly: the worker compacts after each
    drain)."""
    rows = conn.execute(
        text(
            "SELECT id, cell_id, day FROM run WHERE project_id = :p AND NOT compacted ORDER BY id"
        ),
        {"p": project_id},
    ).all()
    return PendingRuns(
        tuple(int(r[0]) for r in rows),
        tuple(int(r[1]) for r in rows),
        tuple(sorted({r[2] for r in rows})),
    )


def per_test_rollup(table: str, pending: PendingRuns) -> sql.Composable:
    """The per-test rollup `table` as a FROM item: with `pending` runs, its rows and those of
    their results, which readers sum alike. Needs %(project)s and pending.params()."""
    if not pending:
        return sql.Identifier(table)
    columns = sql.SQL(f"{PER_TEST_KEYS[table]}, {ROLLUP_VALUES}")
    facts = pending_facts(
        "%(pending_runs)s::int8[]", "%(pending_days)s::date[]", "%(pending_cells)s::int8[]"
    )
    union = "(SELECT {columns} FROM {table} UNION ALL SELECT {columns} FROM ({facts}) p)"
    return sql.SQL(union).format(columns=columns, table=sql.Identifier(table), facts=sql.SQL(facts))


@dataclass(frozen=True)
class FactPart:
    """The rollup rows of buckets before `boundary` (`settled`) or of the rest: a window read
    in two parts, so the settled one can be kept while uploads only change the recent one."""

    boundary: date
    settled: bool
    # Only the rows of these tests (what runs committed since a kept read touched); None: every
    # test's rows.
    tests: tuple[int, ...] | None = None

    def where(self, column: sql.Composable, params: dict[str, Any]) -> sql.Composed:
        """` AND` the SQL condition on the bucket `column`, its parameter added to `params`."""
        params["part_boundary"] = self.boundary
        return sql.SQL(" AND {} {} %(part_boundary)s").format(
            column, sql.SQL("<" if self.settled else ">=")
        )

    def tests_where(self, column: sql.Composable, params: dict[str, Any]) -> sql.Composable:
        """` AND` the test id `column` is one of `tests` (no condition without them). A
        parameter array: PostgreSQL hashes it, one probe per row."""
        if self.tests is None:
            return sql.SQL("")
        params["part_tests"] = list(self.tests)
        return sql.SQL(" AND {} = ANY(%(part_tests)s)").format(column)


def load_fact_sums(
    conn: Connection,
    project_id: int,
    filters: Filters,
    *,
    split_by: tuple[str, ...] = (),
    part: FactPart | None = None,
    per_bucket: bool = True,
) -> pd.DataFrame:
    """Rollup sums per test id and bucket (and split columns); facts_from_sums adds the tests.

    Windows longer than two weeks are bucketed by week rather than day: the frame stays small.
    `per_bucket=False` sums a split's buckets together (day unknown): per-test figures need
    only the sums per (test, split), a fraction of the rows per (test, split, day), and of
    them only `known` and `total_s` (the others are NaN there).
    """
    extra = [sql.Identifier("c", c) for c in _CELL_COLUMNS if c in split_by]
    if not per_bucket and extra:
        return _test_cell_sums(conn, project_id, filters, part, split_by)
    cell_filters = bool(filters.jobs or filters.branches or filters.labels)
    pending = pending_runs(conn, project_id)
    if _long_window(filters) and not extra and not cell_filters:
        # Whole-project questions over weeks: the per-test weekly table, a fraction of the rows.
        where, params = cell_where(_weekly(filters), day_alias="r", bucket="week")
        source = sql.SQL("{} r").format(per_test_rollup("rollup_test_weekly", pending))
        bucket = sql.Identifier("r", "week")
        # One row per (week, test) already, unless results not compacted yet add to it: a
        # GROUP BY would only cost (3x the scan).
        grouped = bool(pending)
    else:
        where, params = cell_where(filters, "c", day_alias="r")
        source = sql.SQL("{} r JOIN cell c ON c.id = r.cell_id").format(
            per_test_rollup("rollup_daily", pending)
        )
        bucket = sql.Identifier("r", "day")
        grouped = True
    if part is not None:
        where += part.where(bucket, params)
        where += part.tests_where(sql.Identifier("r", "test_id"), params)
    params["project"] = project_id
    params.update(pending.params())
    keys = sql.SQL(", ").join([sql.Identifier("r", "test_id"), sql.Identifier("day"), *extra])
    query = sql.SQL(
        """
        SELECT {test}, {bucket} AS day{extra}, {values}
        FROM {source}
        WHERE {where} {group}
        """
    ).format(
        test=sql.Identifier("r", "test_id"),
        bucket=bucket,
        extra=sql.SQL("").join(sql.SQL(", {}").format(c) for c in extra),
        values=_ROLLUP_SUMS if grouped else _ROLLUP_AS_IS,
        source=source,
        where=where,
        group=sql.SQL("GROUP BY {}").format(keys) if grouped else sql.SQL(""),
    )
    if extra:
        return copy_frame(
            conn,
            query,
            params,
            dtypes=dict.fromkeys(_CELL_COLUMNS, "object"),
        )
    return copy_numeric_frame(conn, query, params, _FACT_SUMS_SPEC)


# Per-test figures read only these sums: every column sent costs ~10 ms per 80,000 rows.
_TEST_CELL_SPEC: tuple[tuple[str, PgType], ...] = (
    ("test_id", "int8"),
    ("cell_id", "int8"),
    ("known", "int8"),
    ("total_s", "float8"),
)
_FACT_VALUES = sql.SQL("r.test_id, r.cell_id, r.known, r.total_s")


def _whole_weeks(first: date | None, last: date | None) -> tuple[date | None, date]:
    """[from, to) Mondays of the weeks lying wholly in the days first..last (None: unbounded;
    an unbounded end stops at this week, which still takes uploads)."""
    start = None if first is None else first + timedelta(days=-first.weekday() % 7)
    end = (last + timedelta(days=1)) if last is not None else datetime.now(UTC).date()
    return start, end - timedelta(days=end.weekday())


def _test_cell_sums(
    conn: Connection,
    project_id: int,
    filters: Filters,
    part: FactPart | None,
    split_by: tuple[str, ...],
) -> pd.DataFrame:
    """Sums of `known` and `total_s` per (test, cell) over the window (day unknown, the other
    sums NaN), with the cell's `split_by` columns.

    Whole weeks come from rollup_cell_weekly (a seventh of the rows), the window's partial
    edge weeks from rollup_daily. Grouped on integers and sent as binary COPY, the cells'
    text joined on here (a handful of rows): a fraction of grouping and sending the text.
    """
    first, last = filters.since, filters.until
    if part is not None and part.settled:
        edge = part.boundary - timedelta(days=1)
        last = edge if last is None else min(last, edge)
    elif part is not None:
        first = part.boundary if first is None else max(first, part.boundary)
    weeks_from, weeks_to = _whole_weeks(first, last)
    where, params = cell_where(replace(filters, since=None, until=None), "c", day_alias="r")
    if part is not None:
        where += part.tests_where(sql.Identifier("r", "test_id"), params)
    params.update(project=project_id, first=first, last=last, wf=weeks_from, wt=weeks_to)
    pending = pending_runs(conn, project_id)
    params.update(pending.params())
    day = sql.Identifier("r", "day")
    days: list[sql.Composable] = []
    if first is not None:
        days.append(sql.SQL(" AND {} >= %(first)s").format(day))
    if last is not None:
        days.append(sql.SQL(" AND {} <= %(last)s").format(day))

    def in_weeks(column: sql.Identifier) -> sql.Composed:
        since = sql.SQL("") if weeks_from is None else sql.SQL("{} >= %(wf)s AND ").format(column)
        return sql.SQL("{}{} < %(wt)s").format(since, column)

    weekly: sql.Composable = sql.SQL("")
    if weeks_from is None or weeks_from < weeks_to:
        days.append(sql.SQL(" AND NOT ({})").format(in_weeks(day)))
        weekly = sql.SQL(
            """
            SELECT {values} FROM {table} r JOIN cell c ON c.id = r.cell_id
            WHERE {where} AND {in_weeks}
            UNION ALL"""
        ).format(
            values=_FACT_VALUES,
            table=per_test_rollup("rollup_cell_weekly", pending),
            where=where,
            in_weeks=in_weeks(sql.Identifier("r", "week")),
        )
    query = sql.SQL(
        """
        SELECT r.test_id, r.cell_id, sum(r.known)::bigint AS known, sum(r.total_s) AS total_s
        FROM ({weekly}
            SELECT {values} FROM {daily} r JOIN cell c ON c.id = r.cell_id
            WHERE {where}{days}
        ) r
        GROUP BY r.test_id, r.cell_id
        """
    ).format(
        weekly=weekly,
        values=_FACT_VALUES,
        daily=per_test_rollup("rollup_daily", pending),
        where=where,
        days=sql.SQL("").join(days),
    )
    sums = copy_numeric_frame(conn, query, params, _TEST_CELL_SPEC)
    cells = pd.DataFrame(
        conn.execute(
            text("SELECT id, job, machine, branch, labels_key FROM cell WHERE project_id = :p"),
            {"p": project_id},
        ).all(),
        columns=["cell_id", *_CELL_COLUMNS],
        dtype=object,
    )
    # The cell table stores an unknown machine or branch as '': unknown (None) in facts.
    for column in ("machine", "branch"):
        cells[column] = cells[column].where(cells[column] != "", None)
    wanted = [c for c in _CELL_COLUMNS if c in split_by]
    cells["cell_id"] = cells["cell_id"].astype("int64")
    out = sums.merge(cells[["cell_id", *wanted]], on="cell_id", how="left")
    for column in wanted:
        # Categories fixed by the project's cells: kept and fresh parts concatenate as
        # categoricals, and rollups factorize the codes instead of hashing every row's text.
        categories = sorted(cells[column].dropna().unique().tolist())
        if column == "labels_key" and "" not in categories:
            categories.insert(0, "")
        out[column] = pd.Categorical(out[column], categories=categories)
    out["day"] = pd.NaT
    for column, _ in _FACT_SUMS_SPEC[2:]:
        if column not in out:
            out[column] = np.nan
    return out.drop(columns="cell_id")


def facts_from_sums(
    filters: Filters,
    sums: pd.DataFrame,
    tests: pd.DataFrame,
    *,
    split_by: tuple[str, ...] = (),
) -> pd.DataFrame:
    """Facts from load_fact_sums rows: the attributes of `tests` (load_test_dictionary, param
    values not needed) joined on, and the test's id (`test_id`) besides FACT_COLUMNS."""
    tests = narrow_tests(tests, filters)
    facts = sums.join(tests, on="test_id", how="inner")
    for col in ("job", "machine", "branch", "labels_key"):
        if col not in facts:
            facts[col] = None
    if "labels_key" in split_by:
        facts["labels_key"] = facts["labels_key"].fillna("")
    facts["day"] = pd.to_datetime(facts["day"])
    # test_id rides along: rollups group on it rather than hashing every nodeid.
    return facts[[*FACT_COLUMNS, "test_id"]].reset_index(drop=True)


def load_file_facts(
    conn: Connection,
    project_id: int,
    filters: Filters,
    *,
    split_by: tuple[str, ...] = (),
    part: FactPart | None = None,
) -> pd.DataFrame:
    """Daily facts per file (the small rollup table), shaped like facts with nodeid = file.

    Adds `tests`: the most tests of the file that one run executed. Test-level filters
    (markers, file globs) need the per-test facts (load_fact_sums).
    """
    weekly = _long_window(filters)
    bucket = "week" if weekly else "day"
    where, params = cell_where(
        _weekly(filters) if weekly else filters, "c", day_alias="r", bucket=bucket
    )
    if part is not None:
        where += part.where(sql.Identifier("r", bucket), params)
    params["project"] = project_id
    extra = [sql.Identifier("c", c) for c in _CELL_COLUMNS if c in split_by]
    keys = [sql.Identifier("r", "file"), sql.Identifier("day"), *extra]
    facts = copy_frame(
        conn,
        sql.SQL(
            """
            SELECT r.file, {bucket} AS day{extra},
                max(r.tests) AS tests, sum(r.runs)::bigint AS runs,
                sum(r.known)::bigint AS known, sum(r.total_s) AS total_s, max(r.max_s) AS max_s,
                sum(r.setup_s) AS setup_s, sum(r.call_s) AS call_s,
                sum(r.teardown_s) AS teardown_s, sum(r.failures)::bigint AS failures,
                sum(r.flaky)::bigint AS flaky, max(r.peak_rss_mib)::float8 AS peak_rss_mib
            FROM {table} r
            JOIN cell c ON c.id = r.cell_id
            WHERE {where} GROUP BY {group}
            """
        ).format(
            bucket=sql.Identifier("r", bucket),
            extra=sql.SQL("").join(sql.SQL(", {}").format(c) for c in extra),
            table=sql.Identifier("rollup_file_weekly" if weekly else "rollup_file_daily"),
            where=where,
            group=sql.SQL(", ").join(keys),
        ),
        params,
        dtypes={
            "file": "object",
            "job": "object",
            "machine": "object",
            "branch": "object",
            "labels_key": "object",
        },
    )
    facts["nodeid"] = facts["file"]
    facts["function"] = facts["file"]
    for col in ("classname", "params", "markers", "job", "machine", "branch", "labels_key"):
        if col not in facts:
            facts[col] = None
    if "labels_key" in split_by:
        facts["labels_key"] = facts["labels_key"].fillna("")
    facts["day"] = pd.to_datetime(facts["day"])
    return facts[[*FACT_COLUMNS, "tests"]].reset_index(drop=True)
