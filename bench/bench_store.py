"""Bulk-load speed: parsed report -> committed rows, against a bare COPY of the same rows.

    .venv/bin/python -m bench.bench_store [--results 200000] [--rounds 3]

Baseline: the same rows, already formatted as CSV, COPYed into an unindexed (logged) table;
a TEMP table, which writes no WAL, is printed for reference. Measured:
`store_run` (test dictionary upsert, results COPY with its index, the two per-file rollups),
committed; then the compaction that adds the stored runs to the three per-test rollups
(ingest/rollup_compaction.py, what the worker runs after a drain), and store + compaction
together; the per-file rollups alone, and the rollup arithmetic alone (sums from the same array
parameters, nothing written). Reports rows/s of each and their ratio to the bare COPY.

Before (the figures README.md quotes; tests/test_before_figures.py checks them):
- `0.07-0.08x`: whole store_run over the bare COPY at 200,000 results (a cell that ran that day,
  then the first run of a cell-day), the code at commit 9240d1a363be (the parent of the
  rollup compaction), run right before the new code, `python -m bench.bench_store --results 200000`.
- `0.25-0.31x`: whole store_run over the bare COPY at 200,000 results (a cell that ran that day,
  then the first run of a cell-day), the code at commit d74ae0c447b3 (the parent of the cuts
  to the worker's per-upload Python and the 131,072-result compaction passes), three runs each
  next to a run of the new code, load average 0.8-2.5,
  `python -m bench.bench_store --results 200000`.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import psycopg

from bench.common import scratch_database
from ingest.merge import MergedRun
from ingest.model import SessionInfo, results_frame
from ingest.pg_arrays import Float8Array, Int4Array, Int8Array
from ingest.rollup_compaction import compact_backlog
from ingest.store import KnownTests, RunMetadata, store_run


def synthetic_results(n: int, seed: int) -> pd.DataFrame:
    """n pytest-like results over n/50 files."""
    rng = np.random.default_rng(seed)
    files = np.array([f"tests/test_mod{i}.py" for i in range(max(1, n // 50))], dtype=object)
    file_idx = np.arange(n) % len(files)
    names = np.array([f"test_case_{i}" for i in range(n)], dtype=object)
    nodeids = files[file_idx] + "::" + names
    return results_frame(
        {
            "nodeid": nodeids,
            "file": files[file_idx],
            "function": names,
            "outcome": np.where(rng.random(n) < 0.01, "failed", "passed"),
            "duration_s": rng.lognormal(-3, 1.5, n),
            "setup_s": rng.lognormal(-6, 1, n),
            "call_s": rng.lognormal(-3, 1.5, n),
            "teardown_s": rng.lognormal(-7, 1, n),
        }
    )


def bare_copy(dsn: str, frame: pd.DataFrame, *, temporary: bool = False) -> float:
    """Seconds to COPY pre-formatted rows into an unindexed table (formatting not timed).

    The baseline is a plain (logged) table, like the ones the store writes; `temporary` times
    a temp table, which skips the write-ahead log, for reference.
    """
    cols = ["nodeid", "outcome", "duration_s", "setup_s", "call_s", "teardown_s"]
    buffer = io.StringIO()
    frame[cols].assign(run_id=1, test_id=np.arange(len(frame))).to_csv(
        buffer, header=False, index=False
    )
    payload = buffer.getvalue()
    with psycopg.connect(dsn) as conn:
        conn.execute("DROP TABLE IF EXISTS bare")
        conn.execute(
            f"CREATE {'TEMP ' if temporary else ''}TABLE bare (nodeid text, outcome text, "
            "duration_s float8, setup_s float8, call_s float8, teardown_s float8, run_id bigint, "
            "test_id bigint)"
        )
        conn.commit()
        start = time.perf_counter()
        with conn.cursor().copy("COPY bare FROM STDIN (FORMAT csv)") as copy:
            copy.write(payload)
        conn.commit()
        elapsed = time.perf_counter() - start
        conn.execute("DROP TABLE bare")
        conn.commit()
        return elapsed


# What a long-running worker's connection remembers once the suite's tests are written.
WORKER_MEMO = KnownTests()


def results_path(dsn: str, frame: pd.DataFrame, project_id: int, day: datetime) -> float:
    """Seconds for what the issue's target counts: test ids, dictionary upsert, results COPY
    into the indexed partition, commit (the run row and rollups are left out)."""
    from ingest import store

    with psycopg.connect(dsn) as conn:
        start = time.perf_counter()
        ids = store.compute_test_ids(project_id, frame["nodeid"])
        store._upsert_test_cases(conn, project_id, day.date(), frame, ids, WORKER_MEMO)
        store._copy_results(
            conn, project_id=project_id, day=day.date(), run_id=999_999, results=frame, ids=ids
        )
        conn.commit()
        return time.perf_counter() - start


def full_store(dsn: str, frame: pd.DataFrame, project_id: int, day: datetime) -> float:
    """Seconds for store_run and the commit, on a day whose partition exists already."""
    merged = MergedRun(results=frame, session=SessionInfo())
    with psycopg.connect(dsn) as conn:
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash) VALUES (%s, %s) RETURNING id",
            (project_id, str(time.time_ns()).encode()),
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
        start = time.perf_counter()
        store_run(
            conn,
            project_id=project_id,
            upload_id=upload_id,
            meta=RunMetadata(job="bench", started_at=day),
            merged=merged,
            known_tests=WORKER_MEMO,
        )
        conn.commit()
        return time.perf_counter() - start


def compaction(dsn: str, project_id: int) -> tuple[float, int]:
    """Seconds to add every stored run not compacted yet to the per-test rollups (what the
    worker does after a drain), and how many runs that was."""
    with psycopg.connect(dsn) as conn:
        start = time.perf_counter()
        done = compact_backlog(conn, projects=[project_id])
        return time.perf_counter() - start, done.runs


def rollups_alone(
    dsn: str, frame: pd.DataFrame, project_id: int, day: datetime, *, write: bool
) -> float:
    """Seconds for the per-file rollups the ingest writes for one run on a fresh cell-day,
    committed (`write`), or for sums over the same array parameters thrown away: what the
    rollup arithmetic costs without a row written."""
    from ingest import store

    ids = store.compute_test_ids(project_id, frame["nodeid"])
    with psycopg.connect(dsn) as conn:
        cell_id = store._cell_id(conn, project_id, RunMetadata(job=f"alone-{time.time_ns()}"), "")
        conn.commit()
        start = time.perf_counter()
        if write:
            store._store_file_rollups(
                conn, project_id=project_id, day=day.date(), cell_id=cell_id, results=frame
            )
        else:
            conn.execute(
                "SELECT count(*), sum(d), max(d), count(DISTINCT f) FROM unnest(%b, %b, %b) "
                "AS u(t, d, f)",
                (
                    Int8Array(np.sort(ids)),
                    Float8Array(frame["duration_s"].to_numpy()),
                    Int4Array(pd.factorize(frame["file"])[0].astype(np.int32)),
                ),
            ).fetchone()
        conn.commit()
        return time.perf_counter() - start


def many_runs(
    dsn: str, frame: pd.DataFrame, project_id: int, day: datetime, *, runs: int, batch: int
) -> float:
    """Seconds to store `runs` runs of the suite `frame` (12 jobs taking turns, one day, the
    suite's tests known), `batch` runs per transaction: store_run and a commit per run, or
    ingest.store_batch.store_runs over `batch` prepared runs and one commit."""
    from ingest.store import prepare_run
    from ingest.store_batch import store_runs

    merged = MergedRun(results=frame, session=SessionInfo())
    memo = KnownTests()
    with psycopg.connect(dsn) as conn:
        uploads = [
            int(row[0])
            for row in conn.execute(
                "INSERT INTO upload (project_id, content_hash, status) SELECT %s, "
                "convert_to(%s || g, 'UTF8'), 'done' FROM generate_series(1, %s) g RETURNING id",
                (project_id, f"many-{time.time_ns()}-", runs),
            ).fetchall()
        ]
        conn.commit()
        # Warm-up, not timed: the suite's tests written and remembered, the day's partition.
        store_run(
            conn, project_id=project_id, upload_id=uploads[0], merged=merged,
            meta=RunMetadata(job="many-warm", started_at=day), known_tests=memo,
        )  # fmt: skip
        conn.commit()
        start = time.perf_counter()
        for first in range(0, runs, batch):
            metas = [
                (u, RunMetadata(job=f"many-{k % 12}", started_at=day))
                for k, u in enumerate(uploads[first : first + batch], start=first)
            ]
            if batch == 1:
                ((upload_id, meta),) = metas
                store_run(
                    conn, project_id=project_id, upload_id=upload_id, meta=meta, merged=merged,
                    known_tests=memo,
                )  # fmt: skip
            else:
                prepared = [
                    prepare_run(conn, project_id=project_id, upload_id=u, meta=meta, merged=merged)
                    for u, meta in metas
                ]
                store_runs(conn, project_id=project_id, runs=prepared, known_tests=memo)
            conn.commit()
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--suite", type=int, default=1000, help="tests per run of the many-runs comparison"
    )
    parser.add_argument("--batch", type=int, default=8, help="runs per batched transaction")
    args = parser.parse_args()
    frame = synthetic_results(args.results, seed=1)
    with scratch_database() as (_, dsn):
        with psycopg.connect(dsn) as conn:
            project_id = conn.execute(
                "INSERT INTO project (slug, name) VALUES ('bench', 'bench') RETURNING id"
            ).fetchone()[0]  # type: ignore[index]
            conn.commit()
        base_day = datetime(2026, 1, 1, tzinfo=UTC)
        # Warm-up: creates the partition and the test dictionary (a suite's first upload).
        first = full_store(dsn, frame, project_id, base_day)
        compaction(dsn, project_id)
        copies, temp_copies, stores, paths, same_day = [], [], [], [], []
        rollups, sums, singles, batches = [], [], [], []
        compact_new, compact_again, compact_singles, compact_batches = [], [], [], []
        suite = frame.iloc[: args.suite].reset_index(drop=True)
        runs = args.results // args.suite
        for r in range(args.rounds):
            copies.append(bare_copy(dsn, frame))
            temp_copies.append(bare_copy(dsn, frame, temporary=True))
            paths.append(results_path(dsn, frame, project_id, base_day))
            stores.append(full_store(dsn, frame, project_id, base_day + timedelta(days=r + 1)))
            compact_new.append(compaction(dsn, project_id)[0])
            same_day.append(full_store(dsn, frame, project_id, base_day + timedelta(days=r + 1)))
            compact_again.append(compaction(dsn, project_id)[0])
            # A day of the same week: the weekly rows exist, as for every run after a week's first.
            rollups.append(rollups_alone(dsn, frame, project_id, base_day, write=True))
            sums.append(rollups_alone(dsn, frame, project_id, base_day, write=False))
            # The same number of results as runs of a known suite: one at a time, batched.
            many_day = base_day + timedelta(days=10 + r)
            singles.append(many_runs(dsn, suite, project_id, many_day, runs=runs, batch=1))
            compact_singles.append(compaction(dsn, project_id)[0])
            batches.append(many_runs(dsn, suite, project_id, many_day, runs=runs, batch=args.batch))
            compact_batches.append(compaction(dsn, project_id)[0])
    n = len(frame)
    copy_rate = n / statistics.median(copies)
    path_rate = n / statistics.median(paths)
    store_rate = n / statistics.median(stores)
    same_rate = n / statistics.median(same_day)
    print(f"results per upload:                         {n}")
    print(f"bare COPY (baseline, CSV, unindexed):       {copy_rate:>9,.0f} rows/s")
    temp_rate = n / statistics.median(temp_copies)
    print(f"  the same into a TEMP table (no WAL):      {temp_rate:>9,.0f} rows/s (reference)")
    print(
        f"results + dictionary + index (the target):  {path_rate:>9,.0f} rows/s  "
        f"ratio {path_rate / copy_rate:.2f}x (target >= 0.5x)"
    )
    print(
        f"whole store_run, first run of a cell-day:   {store_rate:>9,.0f} rows/s  "
        f"ratio {store_rate / copy_rate:.2f}x (per-file rollups; the per-test ones compacted)"
    )
    print(
        f"whole store_run, cell already ran that day: {same_rate:>9,.0f} rows/s  "
        f"ratio {same_rate / copy_rate:.2f}x"
    )
    print(f"whole store_run, a suite's first upload:    {n / first:>9,.0f} rows/s (every test new)")
    for label, times, stored in (
        ("first run of a cell-day", compact_new, stores),
        ("cell already ran that day", compact_again, same_day),
    ):
        rate = n / statistics.median(times)
        both = n / (statistics.median(times) + statistics.median(stored))
        print(
            f"  its compaction ({label}): {rate:>9,.0f} rows/s  ratio {rate / copy_rate:.2f}x; "
            f"store + compaction {both:>9,.0f} rows/s  ratio {both / copy_rate:.2f}x"
        )
    rollup_rate = n / statistics.median(rollups)
    print(
        f"the per-file rollups alone (a new cell-day): {rollup_rate:>9,.0f} rows/s  "
        f"ratio {rollup_rate / copy_rate:.2f}x"
    )
    sum_rate = n / statistics.median(sums)
    print(
        f"  their arithmetic alone (nothing written):  {sum_rate:>9,.0f} rows/s  "
        f"ratio {sum_rate / copy_rate:.2f}x"
    )
    single_rate = n / statistics.median(singles) if singles else 0.0
    batch_rate = n / statistics.median(batches) if batches else 0.0
    print(
        f"{runs} runs of a known {args.suite}-test suite, a commit each: "
        f"{single_rate:>9,.0f} rows/s  ratio {single_rate / copy_rate:.2f}x"
    )
    print(
        f"  the same, {args.batch} runs per transaction (store_runs): "
        f"{batch_rate:>9,.0f} rows/s  ratio {batch_rate / copy_rate:.2f}x"
    )
    for label, times, stored in (
        ("a commit each", compact_singles, singles),
        (f"{args.batch} per transaction", compact_batches, batches),
    ):
        if not times:
            continue
        rate = n / statistics.median(times)
        both = n / (statistics.median(times) + statistics.median(stored))
        print(
            f"  their compaction ({label}): {rate:>9,.0f} rows/s  ratio {rate / copy_rate:.2f}x; "
            f"store + compaction {both:>9,.0f} rows/s  ratio {both / copy_rate:.2f}x"
        )
    print(f"medians of {args.rounds} rounds")


if __name__ == "__main__":
    main()
