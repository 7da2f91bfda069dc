"""Add stored runs' results to the per-test rollups, off the ingest's transaction.

An ingest writes a run's results and its per-file rollups only; its run row says
`compacted = false`. Compaction adds the results of such runs to rollup_daily,
rollup_cell_weekly and rollup_test_weekly and marks them compacted in one transaction, so any
snapshot sees a run either in the rollups or not compacted, never both and never neither
(readers add the results of runs not compacted: app/db/rollup_reads.py). Several runs of one
suite fold into one rollup row per test: the per-test rows a batch writes do not grow with
its runs, where the ingest wrote three per result.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from ingest.store import ROLLUP_MERGE, ROLLUP_SUMS, ROLLUP_VALUES, result_partition

log = logging.getLogger("laptime.worker")

# A pass (one transaction) takes runs in order until their results reach RESULTS_PER_PASS
# (at least one run, at most RUNS_PER_PASS): the more runs of a suite a pass holds, the fewer
# rollup rows it writes per run (a known 1,000-test suite's compaction cost 8.3 ms of the
# database's CPU per upload at 32 runs a pass, 3.5 ms at 128: bench/profile_ingest.py --known),
# and bounding its results keeps the transaction, and the locks it holds, under a second.
RESULTS_PER_PASS = 131_072
RUNS_PER_PASS = 256
# One compactor per project at a time (an advisory lock): two would update the same per-test
# rows from different runs and only queue on each other.
_PROJECT_LOCK_CLASS = 727005
# How long summarizing waits for a partition another summarizer or a vacuum holds.
_SUMMARIZE_LOCK_WAIT = "200ms"

PER_TEST_KEYS = {
    "rollup_daily": "project_id, day, cell_id, test_id",
    "rollup_cell_weekly": "project_id, week, cell_id, test_id",
    "rollup_test_weekly": "project_id, week, test_id",
}


def result_facts(runs: str, days: str, cells: str, *, pending: bool) -> str:
    """SQL of one fact row per stored result of the runs `runs` (SQL int8[] expressions: the
    run ids, their days, each run's cell): project_id, day, week, cell_id, test_id and the
    per-test rollups' value columns; with `pending`, only of the runs still not compacted.

    What the ingest's fact rows were (ingest.store): runs 1, a NULL duration unknown and 0 s,
    a phase nobody reported NULL; summed as ROLLUP_SUMS, they are what the upserts' merge
    keeps. One scan of the runs' days' partitions, narrowed by the run_id block range index;
    the cell is looked up in the arrays, not joined (a join of a few runs against thousands of
    results was planned as a nested loop, 0.3 s per 32,000 results).
    """
    # The runs still pending are read once (an array), not looked up per result as IN did.
    still = (
        f" AND t.run_id = ANY(ARRAY(SELECT id FROM run WHERE id = ANY({runs}) AND NOT compacted))"
        if pending
        else ""
    )
    return f"""
    SELECT t.project_id, t.day, t.day - (extract(isodow FROM t.day)::int - 1) AS week,
        ({cells})[array_position({runs}, t.run_id)] AS cell_id, t.test_id, 1 AS runs,
        (t.duration_s IS NOT NULL)::int AS known, coalesce(t.duration_s, 0) AS total_s,
        t.duration_s AS max_s, t.setup_s, t.call_s, t.teardown_s,
        (t.outcome IN ('failed', 'error'))::int AS failures, t.flaky::int AS flaky,
        t.peak_rss_mib
    FROM test_result t
    WHERE t.day = ANY({days}) AND t.run_id = ANY({runs}){still}"""


def pending_facts(runs: str, days: str, cells: str) -> str:
    """result_facts of the listed runs still not compacted (SQL parameters, from
    app.db.rollup_reads.pending_runs): what a reader adds to the per-test rollups to be exact.
    A run compacted since the list was read is in the rollups, and left out here by the same
    statement's snapshot: counted once either way."""
    return result_facts(runs, days, cells, pending=True)


_COMPACTED_FACTS = result_facts(
    "%(runs)s::int8[]", "%(days)s::date[]", "%(cells)s::int8[]", pending=False
)
# Sorting a pass's results for the sums spilled to disk at the default 4 MB (32,000 results:
# 3 MB on disk, a third of the pass); the pass's own transaction gets more.
_PASS_WORK_MEM = "64MB"

_COMPACT = f"""
WITH v AS MATERIALIZED (
    SELECT day, week, cell_id, test_id, {ROLLUP_SUMS} FROM ({_COMPACTED_FACTS}) f
    GROUP BY day, week, cell_id, test_id
), daily AS (
    INSERT INTO rollup_daily AS r (project_id, day, cell_id, test_id, {ROLLUP_VALUES})
    SELECT %(project)s, day, cell_id, test_id, {ROLLUP_VALUES} FROM v ORDER BY test_id
    ON CONFLICT (project_id, day, cell_id, test_id) DO UPDATE SET {ROLLUP_MERGE}
), cell_weekly AS (
    INSERT INTO rollup_cell_weekly AS r (project_id, week, cell_id, test_id, {ROLLUP_VALUES})
    SELECT %(project)s, week, cell_id, test_id, {ROLLUP_SUMS} FROM v
    GROUP BY week, cell_id, test_id ORDER BY test_id
    ON CONFLICT (project_id, week, cell_id, test_id) DO UPDATE SET {ROLLUP_MERGE}
), test_weekly AS (
    INSERT INTO rollup_test_weekly AS r (project_id, week, test_id, {ROLLUP_VALUES})
    SELECT %(project)s, week, test_id, {ROLLUP_SUMS} FROM v GROUP BY week, test_id ORDER BY test_id
    ON CONFLICT (project_id, week, test_id) DO UPDATE SET {ROLLUP_MERGE}
)
UPDATE run SET compacted = true WHERE id = ANY(%(runs)s::int8[])
"""


@dataclass(frozen=True)
class Compacted:
    """What compaction did: runs added to the per-test rollups, and whether another
    compactor held a project (its runs are left to it)."""

    runs: int = 0
    busy: bool = False
    # Runs not compacted were left after this pass (the next pass has work).
    more: bool = False

    def __add__(self, other: Compacted) -> Compacted:
        # Passes add up in order: whether work is left is the later pass's word.
        return Compacted(self.runs + other.runs, self.busy or other.busy, other.more)


def compact_project(
    conn: psycopg.Connection[Any],
    project_id: int,
    *,
    max_runs: int = RUNS_PER_PASS,
    max_results: int = RESULTS_PER_PASS,
) -> Compacted:
    """Add the project's oldest runs not compacted yet to the per-test rollups, as many as fit
    in `max_results` results (at least one, at most `max_runs`), in one transaction of `conn`
    (committed here). Nothing when another compactor has it."""
    if conn.info.transaction_status != TransactionStatus.IDLE:
        # Inside a transaction, conn.transaction() would be a savepoint, committed by nobody.
        raise RuntimeError("compaction commits its own transaction: call it outside one")
    summarize_partitions(conn, project_id)
    with conn.transaction():
        locked = conn.execute(
            "SELECT pg_try_advisory_xact_lock(%s, hashtext(%s::text))",
            (_PROJECT_LOCK_CLASS, project_id),
        ).fetchone()
        if not locked or not locked[0]:
            return Compacted(busy=True)
        pending = conn.execute(
            "SELECT id, day, cell_id, tests FROM run WHERE project_id = %s AND NOT compacted "
            "ORDER BY id LIMIT %s",
            (project_id, max_runs + 1),
        ).fetchall()
        if not pending:
            return Compacted()
        rows = _within_budget(pending[:max_runs], max_results)
        runs = [int(row[0]) for row in rows]
        conn.execute(f"SET LOCAL work_mem = '{_PASS_WORK_MEM}'")
        # A day's partition filling up has no statistics yet, and the planner scanned all of
        # it rather than the block ranges of the pass's runs (summarize_partitions).
        conn.execute("SET LOCAL enable_seqscan = off")
        conn.execute(
            _COMPACT,
            {
                "project": project_id,
                "runs": runs,
                "days": sorted({row[1] for row in rows}),
                "cells": [int(row[2]) for row in rows],
            },
        )
    return Compacted(runs=len(runs), more=len(rows) < len(pending))


# The days' partitions of test_result, each with its run_id block range index, and whether
# it has statistics yet.
_PARTITIONS = """
SELECT p.relnamespace::regnamespace::text, p.relname, x.indexrelid::int8,
    coalesce(s.last_analyze, s.last_autoanalyze) IS NOT NULL
FROM unnest(%s::text[]) AS name
JOIN pg_class p ON p.oid = to_regclass(name)
JOIN pg_index x ON x.indrelid = p.oid
JOIN pg_inherits i ON i.inhrelid = x.indexrelid AND i.inhparent = 'test_result_run'::regclass
LEFT JOIN pg_stat_user_tables s ON s.relid = p.oid
"""


def summarize_partitions(conn: psycopg.Connection[Any], project_id: int) -> None:
    """Summarize the run_id block ranges filled since the last pass in the partitions of the
    project's pending runs, and give a partition statistics when it has none, in a transaction
    of its own: a pass, and a reader adding pending runs, then read the ranges of those runs,
    not the whole day. Nothing summarizes the ranges while a day fills (`autosummarize` is
    off; vacuum comes late), a range with no summary is always read, and with no statistics
    the planner scanned the whole partition. Skipped when another summarizer or a vacuum holds
    a partition, or the role may not: the reads are then slower, never wrong."""
    with conn.transaction():
        days = conn.execute(
            "SELECT DISTINCT day FROM run WHERE project_id = %s AND NOT compacted", (project_id,)
        ).fetchall()
        if not days:
            return
        partitions = conn.execute(
            _PARTITIONS, ([result_partition(day) for (day,) in days],)
        ).fetchall()
        conn.execute(f"SET LOCAL lock_timeout = '{_SUMMARIZE_LOCK_WAIT}'")
        try:
            with conn.transaction():
                for schema, partition, index, analyzed in partitions:
                    conn.execute("SELECT brin_summarize_new_values(%s::oid::regclass)", (index,))
                    if not analyzed:
                        # Once: autovacuum keeps them as the partition grows.
                        table = sql.Identifier(schema, partition)
                        conn.execute(sql.SQL("ANALYZE {}").format(table))
        except (psycopg.errors.LockNotAvailable, psycopg.errors.InsufficientPrivilege) as exc:
            # Busy, or a worker role that does not own the partition: correct either way.
            log.info("partitions of project %s left unsummarized: %s", project_id, exc)


def _within_budget(rows: list[Any], max_results: int) -> list[Any]:
    """The first rows (id, day, cell_id, tests) whose tests add up to `max_results`, at least
    one."""
    taken, results = 1, int(rows[0][3] or 0)
    while taken < len(rows) and results + int(rows[taken][3] or 0) <= max_results:
        results += int(rows[taken][3] or 0)
        taken += 1
    return rows[:taken]


def backlog_results(conn: psycopg.Connection[Any], project_id: int) -> int:
    """Results of the project's runs not compacted yet: what every per-test read of it adds
    up again until they are."""
    row = conn.execute(
        "SELECT coalesce(sum(tests), 0) FROM run WHERE project_id = %s AND NOT compacted",
        (project_id,),
    ).fetchone()
    return int(row[0]) if row else 0


def projects_with_backlog(conn: psycopg.Connection[Any], *, limit: int = 100) -> list[int]:
    """Projects that have runs not compacted yet (oldest run first)."""
    with conn.transaction():
        rows = conn.execute(
            "SELECT project_id FROM run WHERE NOT compacted GROUP BY project_id "
            "ORDER BY min(id) LIMIT %s",
            (limit,),
        ).fetchall()
    return [int(project_id) for (project_id,) in rows]


def compact_backlog(
    conn: psycopg.Connection[Any],
    *,
    projects: list[int] | None = None,
    max_passes: int = 1_000,
    max_results: int = RESULTS_PER_PASS,
) -> Compacted:
    """Compact every run not compacted yet (of `projects`, or of all), pass by pass; stops
    early after `max_passes` transactions. `conn` must not be inside a transaction."""
    done, left = Compacted(), False
    for project_id in projects_with_backlog(conn) if projects is None else projects:
        for _ in range(max_passes):
            step = compact_project(conn, project_id, max_results=max_results)
            done += step
            if not step.more:
                break
        left = left or step.more
    return replace(done, more=left)
