"""Write the shared rows of several runs of one project at once: one dictionary upsert, one
COPY of every result, one statement for every per-file rollup, over the union of the runs
(the per-test rollups are added later: ingest.rollup_compaction).

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

from ingest.pg_arrays import Int4Array, Int8Array
from ingest.store import (
    DICTIONARY_TEXT,
    FILE_SUM_ROWS,
    RESULT_COLUMNS,
    ROLLUP_MERGE,
    ROLLUP_SUMS,
    ROLLUP_VALUES,
    TEST_CASE_CONFLICT,
    KnownTests,
    PreparedRun,
    StoreResult,
    copy_result_frame,
    dictionary_params,
    dictionary_rows,
    file_fact_sums,
    file_sum_params,
    result_frame,
)
from model.frames import fact_value_arrays, sum_facts_by_code

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

_RUN_FILE_SUMS = FILE_SUM_ROWS.format(
    extra=", day_code, cell_id", extra_arrays=", %(day_code)b, %(cell_id)b"
)
_STORE_FILE_ROLLUPS = f"""
WITH files AS MATERIALIZED (
    -- Each run's per-file sums (ingest.store.file_fact_sums): a file's `tests` is the most any
    -- one run had.
    SELECT (%(days)s::date[])[f.day_code + 1] AS day, (%(weeks)s::date[])[f.day_code + 1] AS week,
        f.*
    FROM ({_RUN_FILE_SUMS}) f
), file_daily AS (
    INSERT INTO rollup_file_daily AS r (project_id, day, cell_id, file, tests, {ROLLUP_VALUES})
    SELECT %(project)s, day, cell_id, file, max(tests), {ROLLUP_SUMS} FROM files
    GROUP BY day, cell_id, file ORDER BY file
    ON CONFLICT (project_id, day, cell_id, file) DO UPDATE SET
        tests = greatest(r.tests, excluded.tests), {ROLLUP_MERGE}
)
INSERT INTO rollup_file_weekly AS r (project_id, week, cell_id, file, tests, {ROLLUP_VALUES})
SELECT %(project)s, week, cell_id, file, max(tests), {ROLLUP_SUMS} FROM files
GROUP BY week, cell_id, file ORDER BY file
ON CONFLICT (project_id, week, cell_id, file) DO UPDATE SET
    tests = greatest(r.tests, excluded.tests), {ROLLUP_MERGE}
"""

# The advisory locks store_run takes per run (ingest.store._store_file_rollups), for every
# (cell, day) and (project, week) of the batch: all (cell, day) keys first, then the weeks,
# each class in one order, so batches and single ingests never wait on each other in a cycle.
_LOCK_ALL = """
SELECT count(pg_advisory_xact_lock(hashtextextended(k.key, k.class)))
FROM (SELECT * FROM unnest(%(keys)s::text[], %(classes)s::int8[]) AS u(key, class)
      ORDER BY class, key) AS k
"""


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
    stored = [runs[i] for i in codes]
    results = batch_results(stored)
    copy_result_frame(conn, batch_result_frame(project_id, stored, results))
    _store_file_rollups(conn, project_id, stored, day_code, days, results)
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


def _store_file_rollups(
    conn: psycopg.Connection[Any],
    project_id: int,
    runs: list[PreparedRun],
    day_code: dict[Any, int],
    days: list[Any],
    results: pd.DataFrame,
) -> None:
    """Every per-file rollup of every run (`results`: batch_results of them) in one statement,
    after the locks each run's store takes (the per-test ones: ingest.rollup_compaction)."""
    weeks = [day - timedelta(days=day.weekday()) for day in days]
    cell_days = sorted({f"{project_id}:{run.day}:{run.cell_id}" for run in runs})
    week_keys = sorted({f"{project_id}:{weeks[day_code[run.day]]}" for run in runs})
    conn.execute(
        _LOCK_ALL,
        {
            "keys": [*cell_days, *week_keys],
            "classes": [727003] * len(cell_days) + [727004] * len(week_keys),
        },
    )
    sums = batch_file_sums(runs, results)
    run_day_codes = np.array([day_code[run.day] for run in runs], dtype=np.int32)
    run_cells = np.array([run.cell_id for run in runs], dtype=np.int64)
    conn.execute(
        _STORE_FILE_ROLLUPS,
        {
            "project": project_id,
            "days": days,
            "weeks": weeks,
            "day_code": Int4Array(run_day_codes[sums["run"].to_numpy()]),
            "cell_id": Int8Array(run_cells[sums["run"].to_numpy()]),
            **file_sum_params(sums),
        },
    )


# What the results COPY and the per-file sums read of each run's results.
_BATCH_COLUMNS = (*RESULT_COLUMNS, "file")


def batch_results(runs: list[PreparedRun]) -> pd.DataFrame:
    """The runs' results end to end, only the columns the COPY and the per-file sums read:
    one frame built once, not one per run and a concatenation (bench/profile_ingest.py)."""
    if len(runs) == 1:
        return runs[0].results
    return pd.DataFrame(
        {c: np.concatenate([run.results[c].to_numpy() for run in runs]) for c in _BATCH_COLUMNS},
        copy=False,
    )


def batch_result_frame(
    project_id: int, runs: list[PreparedRun], results: pd.DataFrame
) -> pd.DataFrame:
    """result_frame of every run (`results`: batch_results of them), in run order."""
    if len(runs) == 1:
        run = runs[0]
        return result_frame(project_id, run.day, run.run_id, run.results, run.ids)
    frame = result_frame(
        project_id, runs[0].day, runs[0].run_id, results, np.concatenate([r.ids for r in runs])
    )
    lengths = [len(run.results) for run in runs]
    if len({run.day for run in runs}) > 1:
        days = np.array([pd.Timestamp(run.day).to_datetime64() for run in runs])
        frame["day"] = pd.Series(np.repeat(days, lengths)).astype(frame["day"].dtype).to_numpy()
    frame["run_id"] = np.repeat(np.array([run.run_id for run in runs], dtype=np.int64), lengths)
    return frame


def batch_file_sums(runs: list[PreparedRun], results: pd.DataFrame) -> pd.DataFrame:
    """file_fact_sums of each run (`results`: batch_results of them) end to end, with `run`:
    the index of the run each row sums, in run order, each run's files in first-row order."""
    if len(runs) == 1:
        return file_fact_sums(results).assign(run=0)
    file_codes, files = pd.factorize(results["file"].fillna("(unknown)"), use_na_sentinel=False)
    run_of_row = np.repeat(np.arange(len(runs)), [len(run.results) for run in runs])
    # One code per (run, file), in first-row order: runs come in blocks, so run order holds.
    codes, pairs = pd.factorize(run_of_row * len(files) + file_codes)
    sums = sum_facts_by_code(fact_value_arrays(results), codes, len(pairs))
    return pd.DataFrame(
        {
            "file": files[pairs % len(files)],
            "tests": sums["runs"],
            **sums,
            "run": pairs // len(files),
        }
    )
