"""What a compaction pass costs as the day's partition fills.

    .venv/bin/python -m bench.bench_compaction_growth [--runs 128] [--tests 1000] [--rounds 8]

One project on one day of a scratch embedded Postgres. Each round stores `--runs` runs of the
same `--tests`-test suite (as CI jobs upload it) through the real store_run, without compacting,
then times compact_backlog over them: what the worker does every 128 uploads
(ingest/rollup_compaction.py). A pass that reads only the block ranges of its runs costs the
same in every round; one that reads the whole day grows with the day. Then one more run is
stored and left pending, and the statement a reader adds to the per-test rollups for it
(pending_facts) is timed, best of 5: what every per-test read of a page pays while a run waits
for its compaction. Baseline, same run: the first round. Printed per round: the day's stored
results, ms per run compacted and the ratio to the first round, the reader's ms and its ratio.

Before (the figures README.md quotes; tests/test_before_figures.py checks them):
- `2.32-2.53x`: ms per run compacted in the 8th round over the 1st (1,024,000-1,031,000 results
  that day; 7.20-8.37 ms against 3.10-3.31), the code at commit 8c2a3765a32e (before the compactor
  summarized new block ranges and analyzed new partitions) with this bench script, four runs
  alternating with the new code's, load average 0.3-1.0,
  `python -m bench.bench_compaction_growth [--rounds 16]`.
- `3.81-3.90x`: the same in the 16th round (2,048,000-2,063,000 results that day; 11.83-12.93
  ms per run), the code at commit 8c2a3765a32e,
  `python -m bench.bench_compaction_growth --rounds 16`.
- `4.70-4.99x`: a reader with one run pending, 8th round over the 1st (39.6-44.2 ms against
  8.4-8.9), the code at commit 8c2a3765a32e,
  `python -m bench.bench_compaction_growth [--rounds 16]`.
- `9.59x`: the same in the 16th round (80.7 ms), the code at commit 8c2a3765a32e,
  `python -m bench.bench_compaction_growth --rounds 16`.
"""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime

import psycopg

from bench.bench_store import synthetic_results
from bench.common import done_upload, scratch_database
from ingest.merge import MergedRun
from ingest.model import SessionInfo
from ingest.rollup_compaction import compact_backlog, pending_facts
from ingest.store import KnownTests, RunMetadata, store_run


def store_runs(dsn: str, project_id: int, runs: int, tests: int, day: datetime, seed: int) -> None:
    """`runs` runs of the suite stored on `day`, none compacted."""
    memo = KnownTests()
    with psycopg.connect(dsn) as conn:
        for i in range(runs):
            upload_id = done_upload(conn, project_id, f"growth-{seed}-{i}")
            store_run(
                conn,
                project_id=project_id,
                upload_id=upload_id,
                meta=RunMetadata(job=f"job{i % 12}", started_at=day),
                merged=MergedRun(
                    results=synthetic_results(tests, seed * 10_000 + i), session=SessionInfo()
                ),
                known_tests=memo,
            )
            conn.commit()


def pending_read_ms(dsn: str, project_id: int, tests: int, day: datetime, seed: int) -> float:
    """Store one run left pending, time what a reader adds for it (best of 5), compact it."""
    store_runs(dsn, project_id, 1, tests, day, 1_000 + seed)
    facts = pending_facts("%(runs)s::int8[]", "%(days)s::date[]", "%(cells)s::int8[]")
    with psycopg.connect(dsn, autocommit=True) as conn:
        pending = conn.execute(
            "SELECT id, day, cell_id FROM run WHERE project_id = %s AND NOT compacted",
            (project_id,),
        ).fetchall()
        params = {
            "runs": [r[0] for r in pending],
            "days": [r[1] for r in pending],
            "cells": [r[2] for r in pending],
        }
        times = []
        for _ in range(5):
            start = time.perf_counter()
            conn.execute(f"SELECT count(*) FROM ({facts}) f", params).fetchone()
            times.append(time.perf_counter() - start)
        compact_backlog(conn, projects=[project_id])
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=128, help="runs stored per round")
    parser.add_argument("--tests", type=int, default=1000, help="results per run")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    day = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0)
    with scratch_database() as (url, dsn):
        from app.db.engine import make_engine
        from app.db.projects import create_project

        engine = make_engine(url)
        with engine.begin() as conn:
            project_id = create_project(conn, f"growth-{time.time_ns()}").id
        engine.dispose()
        first = None
        print(f"{args.runs} runs of {args.tests} results per round, one day")
        for round_ in range(1, args.rounds + 1):
            store_runs(dsn, project_id, args.runs, args.tests, day, round_)
            with psycopg.connect(dsn) as conn:
                results = conn.execute(
                    "SELECT count(*) FROM test_result WHERE project_id = %s", (project_id,)
                ).fetchone()[0]  # type: ignore[index]
                conn.commit()  # a pass commits its own transaction
                start = time.perf_counter()
                done = compact_backlog(conn, projects=[project_id])
                seconds = time.perf_counter() - start
            per_run = seconds * 1000 / max(done.runs, 1)
            read = pending_read_ms(dsn, project_id, args.tests, day, round_)
            first = first or (per_run, read)
            print(
                f"round {round_}: {results:>9,} results that day, compacted {done.runs} runs "
                f"in {seconds * 1000:.0f} ms, {per_run:.2f} ms per run, x{per_run / first[0]:.2f}"
                f" of round 1; a reader with one run pending {read:.1f} ms, "
                f"x{read / first[1]:.2f}"
            )


if __name__ == "__main__":
    main()
