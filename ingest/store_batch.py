"""Write the shared rows of several runs of one project at once: one dictionary upsert, one
COPY of every result, one statement for every rollup, over the union of the runs.

The runs' own rows (partition, cell, run) are written first by ingest.store.prepare_run;
the caller's transaction holds them all, so the batch is stored completely or not at all.
What it stores equals what storing the runs one after another stores (the batch worker's
differential test, tests/server/test_ingest_batch.py): rollup rows that several runs of the
batch share are summed here first (an upsert cannot touch one row twice), with the same
arithmetic the upsert's merge applies.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import psycopg

from ingest.pg_arrays import Float4Array, Float8Array, Int4Array, Int8Array
from ingest.store import (
    DICTIONARY_TEXT,
    ROLLUP_MERGE,
    ROLLUP_VALUES,
    TEST_CASE_CONFLICT,
    KnownTests,
    PreparedRun,
    StoreResult,
    copy_result_frame,
    dictionary_params,
    dictionary_rows,
    float_column,
    result_frame,
)

# As ingest.store's dictionary upsert, with each row's first day; the inserted ids are
# counted per run (the first run of the batch that named them), as separate ingests count.
_UPSERT_TEST_CASES = (
    """
WITH ins AS (
    INSERT INTO test_case AS t (project_id, first_seen, id, nodeid, file, classname, function,
        params, param_values, markers)
    SELECT %(project)s, (%(days)s::date[])[s.day_code + 1], s.id, s.nodeid, s.file,
        s.classname, s.function, s.params, s.param_values::jsonb, s.markers::text[]
    FROM unnest(%(ids)b, %(day_code)b, %(nodeid)b::text[], %(file)b::text[],
        %(classname)b::text[], %(function)b::text[], %(params)b::text[],
        %(param_values)b::text[], %(markers)b::text[])
        AS s(id, day_code, nodeid, file, classname, function, params, param_values, markers)
    ORDER BY s.id
"""
    + TEST_CASE_CONFLICT
    + """    RETURNING id, (xmax = 0) AS inserted
)
SELECT s.run_code, count(*) FROM ins JOIN unnest(%(ids)b, %(run_code)b) AS s(id, run_code)
    USING (id)
WHERE ins.inserted GROUP BY s.run_code
"""
)

# Sums of fact rows sharing a rollup key: what the upsert's merge (ingest.store.ROLLUP_MERGE)
# makes of them one at a time (sum() of no known phase is NULL, as the merge keeps it).
_SUMS = """sum(runs), sum(known), sum(total_s), max(max_s), sum(setup_s), sum(call_s),
        sum(teardown_s), sum(failures), sum(flaky), max(peak_rss_mib)"""

_STORE_ROLLUPS = """
WITH v AS NOT MATERIALIZED (
    SELECT u.test_id, (%(days)s::date[])[u.day_code + 1] AS day,
        (%(weeks)s::date[])[u.day_code + 1] AS week, u.cell_id, u.run_code, u.file_code,
        1 AS runs, (u.duration_s <> 'NaN')::int AS known,
        CASE WHEN u.duration_s <> 'NaN' THEN u.duration_s ELSE 0 END AS total_s,
        nullif(u.duration_s, 'NaN') AS max_s, nullif(u.setup_s, 'NaN') AS setup_s,
        nullif(u.call_s, 'NaN') AS call_s, nullif(u.teardown_s, 'NaN') AS teardown_s,
        u.failures, u.flaky, nullif(u.peak_rss_mib, 'NaN') AS peak_rss_mib
    FROM unnest(%(test_id)b, %(day_code)b, %(cell_id)b, %(run_code)b, %(file_code)b,
        %(duration_s)b, %(setup_s)b, %(call_s)b, %(teardown_s)b, %(failures)b, %(flaky)b,
        %(peak_rss_mib)b)
        AS u(test_id, day_code, cell_id, run_code, file_code, duration_s, setup_s, call_s,
            teardown_s, failures, flaky, peak_rss_mib)
), daily AS (
    INSERT INTO rollup_daily AS r (project_id, day, cell_id, test_id, {values})
    SELECT %(project)s, day, cell_id, test_id, {per_test} FROM v {daily_groups}
    ON CONFLICT (project_id, day, cell_id, test_id) DO UPDATE SET {merge}
), cell_weekly AS (
    INSERT INTO rollup_cell_weekly AS r (project_id, week, cell_id, test_id, {values})
    SELECT %(project)s, week, cell_id, test_id, {per_test} FROM v {cell_weekly_groups}
    ON CONFLICT (project_id, week, cell_id, test_id) DO UPDATE SET {merge}
), test_weekly AS (
    INSERT INTO rollup_test_weekly AS r (project_id, week, test_id, {values})
    SELECT %(project)s, week, test_id, {per_test} FROM v {test_weekly_groups}
    ON CONFLICT (project_id, week, test_id) DO UPDATE SET {merge}
), files AS MATERIALIZED (
    -- Per run and file first: a file's `tests` is the most any one run had.
    SELECT day, week, cell_id, (%(files)b::text[])[file_code + 1] AS file, count(*) AS tests,
        count(*) AS runs, sum(known) AS known, sum(total_s) AS total_s, max(max_s) AS max_s,
        sum(setup_s) AS setup_s, sum(call_s) AS call_s, sum(teardown_s) AS teardown_s,
        sum(failures) AS failures, sum(flaky) AS flaky, max(peak_rss_mib) AS peak_rss_mib
    FROM v GROUP BY day, week, cell_id, run_code, file_code
), file_daily AS (
    INSERT INTO rollup_file_daily AS r (project_id, day, cell_id, file, tests, {values})
    SELECT %(project)s, day, cell_id, file, max(tests), {sums} FROM files
    GROUP BY day, cell_id, file ORDER BY file
    ON CONFLICT (project_id, day, cell_id, file) DO UPDATE SET
        tests = greatest(r.tests, excluded.tests), {merge}
)
INSERT INTO rollup_file_weekly AS r (project_id, week, cell_id, file, tests, {values})
SELECT %(project)s, week, cell_id, file, max(tests), {sums} FROM files
GROUP BY week, cell_id, file ORDER BY file
ON CONFLICT (project_id, week, cell_id, file) DO UPDATE SET
    tests = greatest(r.tests, excluded.tests), {merge}
"""
# Tests that no two runs of the batch share (the arrays come sorted by test id, so a plain
# insert meets them in index order), and tests that some share: summed per key first.
_ROLLUPS_DISTINCT = _STORE_ROLLUPS.format(
    values=ROLLUP_VALUES, sums=_SUMS, merge=ROLLUP_MERGE, per_test=ROLLUP_VALUES,
    daily_groups="", cell_weekly_groups="", test_weekly_groups="",
)  # fmt: skip
_ROLLUPS_SHARED = _STORE_ROLLUPS.format(
    values=ROLLUP_VALUES, sums=_SUMS, merge=ROLLUP_MERGE, per_test=_SUMS,
    daily_groups="GROUP BY day, cell_id, test_id ORDER BY test_id",
    cell_weekly_groups="GROUP BY week, cell_id, test_id ORDER BY test_id",
    test_weekly_groups="GROUP BY week, test_id ORDER BY test_id",
)  # fmt: skip

# The advisory locks store_run takes per run (ingest.store._store_rollups), for every
# (cell, day) and (project, week) of the batch: all (cell, day) keys first, then the weeks,
# each class in one order, so batches and single ingests never wait on each other in a cycle.
_LOCK_ALL = """
SELECT count(pg_advisory_xact_lock(hashtextextended(k.key, k.class)))
FROM (SELECT * FROM unnest(%(keys)s::text[], %(classes)s::int8[]) AS u(key, class)
      ORDER BY class, key) AS k
"""


# What the rollups read of each result.
_FACT_COLUMNS = (
    "file", "duration_s", "setup_s", "call_s", "teardown_s", "outcome", "flaky", "peak_rss_mib",
)  # fmt: skip


def store_runs(
    conn: psycopg.Connection[Any],
    *,
    project_id: int,
    runs: list[PreparedRun],
    known_tests: KnownTests,
) -> list[StoreResult]:
    """Write the dictionary, results and rollups of prepared runs of one project with one
    statement each; what each run stored, in the order given."""
    codes = [i for i, run in enumerate(runs) if not run.results.empty]
    if not codes:
        return [run.stored(0) for run in runs]
    days = sorted({runs[i].day for i in codes})
    day_code = {day: code for code, day in enumerate(days)}
    new_tests = _upsert_test_cases(conn, project_id, runs, codes, day_code, days, known_tests)
    copy_result_frame(
        conn,
        pd.concat(
            [
                result_frame(project_id, runs[i].day, runs[i].run_id, runs[i].results, runs[i].ids)
                for i in codes
            ],
            ignore_index=True,
        ),
    )
    _store_rollups(conn, project_id, runs, codes, day_code, days)
    return [run.stored(new_tests.get(i, 0)) for i, run in enumerate(runs)]


def _upsert_test_cases(
    conn: psycopg.Connection[Any],
    project_id: int,
    runs: list[PreparedRun],
    codes: list[int],
    day_code: dict[Any, int],
    days: list[Any],
    known_tests: KnownTests,
) -> dict[int, int]:
    """One upsert of every run's new or changed test cases; the tests each run added."""
    parts = []
    for i in codes:
        # Run by run, as separate ingests consult and update the memo.
        rows = dictionary_rows(project_id, runs[i].results, runs[i].ids, known_tests)
        if not rows.empty:
            parts.append(rows.assign(run_code=i, day_code=day_code[runs[i].day]))
    if not parts:
        return {}
    rows = pd.concat(parts, ignore_index=True)
    if not rows["id"].is_unique:
        rows = _one_row_per_test(rows)
    found = conn.execute(
        _UPSERT_TEST_CASES,
        {
            "project": project_id,
            "days": days,
            "day_code": Int4Array(rows["day_code"].to_numpy(np.int32)),
            "run_code": Int4Array(rows["run_code"].to_numpy(np.int32)),
            **dictionary_params(rows),
        },
    ).fetchall()
    return {int(code): int(n) for code, n in found}


def _one_row_per_test(rows: pd.DataFrame) -> pd.DataFrame:
    """A test several runs of the batch sent, as the one row their upserts in turn leave: its
    first run and names, the earliest day, the first file and parametrize values known, the
    latest markers known. (Separate upserts would keep a later run's parametrize values over
    an earlier one's only when its markers changed too; one nodeid's values do not change.)"""
    grouped = rows.groupby("id", sort=False)
    first = grouped.first()  # first non-null of each column, in run order
    one = pd.DataFrame(
        {
            "run_code": grouped["run_code"].min(),
            "day_code": grouped["day_code"].min(),
            **{c: first[c] for c in ("nodeid", "file", "classname", "function", "params")},
            "param_values": first["param_values"],
            "markers": grouped["markers"].last(),
        }
    )
    # Insert-only names come from the first run's row even where it has none.
    first_rows = rows.drop_duplicates("id").set_index("id")
    for column in ("classname", "function", "params"):
        one[column] = first_rows[column]
    return one.rename_axis("id").reset_index()[["id", "run_code", "day_code", *DICTIONARY_TEXT]]


def _store_rollups(
    conn: psycopg.Connection[Any],
    project_id: int,
    runs: list[PreparedRun],
    codes: list[int],
    day_code: dict[Any, int],
    days: list[Any],
) -> None:
    """Every rollup of every run in one statement, after the locks each run's store takes."""
    weeks = [day - timedelta(days=day.weekday()) for day in days]
    cell_days = sorted({f"{project_id}:{runs[i].day}:{runs[i].cell_id}" for i in codes})
    week_keys = sorted({f"{project_id}:{weeks[day_code[runs[i].day]]}" for i in codes})
    conn.execute(
        _LOCK_ALL,
        {
            "keys": [*cell_days, *week_keys],
            "classes": [727003] * len(cell_days) + [727004] * len(week_keys),
        },
    )
    frame = pd.concat(
        [
            runs[i]
            .results[list(_FACT_COLUMNS)]
            .assign(
                test_id=runs[i].ids,
                run_code=i,
                day_code=day_code[runs[i].day],
                cell_id=runs[i].cell_id,
            )
            for i in codes
        ],
        ignore_index=True,
    )
    frame = frame.iloc[np.argsort(frame["test_id"].to_numpy(), kind="stable")]
    file_codes, file_names = pd.factorize(frame["file"].fillna("(unknown)"), sort=False)
    test_ids = frame["test_id"].to_numpy(np.int64)
    shared = bool((test_ids[1:] == test_ids[:-1]).any())

    def floats(column: str) -> Float8Array:
        return Float8Array(float_column(frame[column]))

    conn.execute(
        _ROLLUPS_SHARED if shared else _ROLLUPS_DISTINCT,
        {
            "project": project_id,
            "days": days,
            "weeks": weeks,
            "test_id": Int8Array(test_ids),
            "day_code": Int4Array(frame["day_code"].to_numpy(np.int32)),
            "cell_id": Int8Array(frame["cell_id"].to_numpy(np.int64)),
            "run_code": Int4Array(frame["run_code"].to_numpy(np.int32)),
            "file_code": Int4Array(file_codes.astype(np.int32)),
            "files": [str(name) for name in file_names],
            "duration_s": floats("duration_s"),
            "setup_s": floats("setup_s"),
            "call_s": floats("call_s"),
            "teardown_s": floats("teardown_s"),
            "failures": Int4Array(frame["outcome"].isin(("failed", "error")).to_numpy()),
            "flaky": Int4Array(frame["flaky"].to_numpy().astype(np.int32)),
            "peak_rss_mib": Float4Array(float_column(frame["peak_rss_mib"])),
        },
    )
