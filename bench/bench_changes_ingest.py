"""What change detection adds to one upload's ingest: read the cell's series states, push the
run's point into each touched series, write them back, all in the ingest's transaction.

    .venv/bin/python -m bench.bench_changes_ingest [--tests 10000] [--history 130] [--rounds 15]

A history of `history` default-branch runs of one cell (`tests` tests over tests/50 files, so
every series holds a full 120-run window) is stored through the real `store_run` and pushed
as the worker does; then `rounds` more runs are stored and their detection timed apart from
the store (`run_points` + `detect_at_ingest`, committed with the run). Prints the median and
the worst per upload, the series touched, and, in the same run for comparison, the judging
alone (`SeriesTable.push` of one run into as many full windows, bench_changes.update_speed).
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg

from analysis.changes import DEFAULT_SETTINGS
from analysis.changes.run_points import run_points
from bench.bench_changes import update_speed
from bench.bench_store import synthetic_results
from bench.common import scratch_database
from ingest.change_detection import RunToDetect, detect_at_ingest
from ingest.merge import MergedRun
from ingest.model import SessionInfo
from ingest.store import KnownTests, RunMetadata, store_run


def _merged(tests: int, seed: int) -> MergedRun:
    results = synthetic_results(tests, seed=0)
    # The same tests every run, each with its own steady level and 3% noise.
    rng = np.random.default_rng(seed)
    results["duration_s"] = results["duration_s"] * rng.lognormal(0.0, 0.03, len(results))
    return MergedRun(results=results, session=SessionInfo(wall_s=600.0), partial=False)


def _store_and_detect(
    conn: psycopg.Connection, project_id: int, i: int, tests: int, known: KnownTests
) -> tuple[float, int]:
    """Store run i, then detect; (detection seconds, series touched)."""
    meta = RunMetadata(
        job="unit", branch="main", commit=f"{i:040x}", pipeline=f"p{i}",
        started_at=datetime(2026, 11, 1, tzinfo=UTC) + timedelta(hours=i),
    )  # fmt: skip
    with conn.transaction():
        stored = store_run(
            conn, project_id=project_id, upload_id=i, meta=meta,
            merged=_merged(tests, seed=i), known_tests=known,
        )  # fmt: skip
        start = time.perf_counter()
        assert stored.stored is not None
        points = run_points(stored.stored, run=stored.measures)
        detect_at_ingest(
            conn, RunToDetect(project_id, stored.cell_id, stored.run_id, stored.branch), points
        )
        seconds = time.perf_counter() - start
    return seconds, len(points)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--history", type=int, default=130)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with scratch_database() as (_url, dsn), psycopg.connect(dsn) as conn:
        project_id = conn.execute(
            "INSERT INTO project (slug, name) VALUES ('bench', 'bench') RETURNING id"
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
        known = KnownTests()
        for i in range(args.history):
            _store_and_detect(conn, project_id, i, args.tests, known)
        timings = []
        touched = 0
        for i in range(args.history, args.history + args.rounds):
            seconds, touched = _store_and_detect(conn, project_id, i, args.tests, known)
            timings.append(seconds)
        backlog = conn.execute("SELECT count(*) FROM change_backlog").fetchone()
    push_s = update_speed(touched, DEFAULT_SETTINGS)
    print(
        f"change detection at ingest: {touched} series touched per upload "
        f"({args.tests} tests + files + job wall), full windows after {args.history} runs"
    )
    print(
        f"  per upload: median {statistics.median(timings) * 1000:.1f} ms, "
        f"worst {max(timings) * 1000:.1f} ms over {args.rounds} uploads; backlog {backlog[0]}"  # type: ignore[index]
    )
    print(
        "  judging alone, same run (SeriesTable.push into as many full windows, median of 7): "
        f"{push_s * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
