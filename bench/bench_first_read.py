"""The first rollup read after a large commit, against the steady reads of the same run.

    .venv/bin/python -m bench.bench_first_read [--tests 2000 --days 7 --jobs 4]
        [--big 300000] [--reads 15] [--analyze]

Loads a small history through the real store (analyzed, as autovacuum leaves a settled
database), then stores ONE run of `--big` new results in one transaction through the real
ingest path (store_run, as the worker does), as a CI job of a very large
suite does. Times the first rollup read right after that commit (a page's rollups, nothing
kept), then the same reads `--reads` times (steady: kept frames) and cold after a small upload
(the usual first read), and prints the first read as a ratio to the steady p50. `--analyze`
runs ANALYZE between the commit and the first read: fresh planner statistics, to tell a bad
plan from the cost itself.
"""

from __future__ import annotations

import argparse
import statistics
import time
from datetime import UTC, datetime
from typing import Any

import psycopg

from bench.common import scratch_database, store_upload

READS = (("file", None), ("job", None), ("test", 100))


def page_reads(engine: Any, project_id: int, days: int, shared: Any) -> float:
    """Seconds for the rollups a project page asks for, through the kept frames `shared`."""
    from app.services.project_reads import FrameCache, project_rollup, window_filters

    filters = window_filters(days)
    start = time.perf_counter()
    with engine.connect() as conn:
        cache = FrameCache.for_project(conn, project_id, shared)
        for by, limit in READS:
            project_rollup(conn, project_id, filters, by=by, limit=limit, cache=cache)
    return time.perf_counter() - start


def big_commit(dsn: str, project_id: int, rows: int) -> float:
    """Seconds to store one run of `rows` new tests through the worker's ingest step."""
    from ingest.merge import merge_reports
    from ingest.model import ParsedReport, results_frame
    from ingest.store import RunMetadata, store_run

    files = [f"tests/big/test_mod{i // 50}.py" for i in range(rows)]
    report = ParsedReport(
        format="junit",
        results=results_frame(
            {
                "nodeid": [f"{f}::test_case_{i}" for i, f in enumerate(files)],
                "file": files,
                "function": [f"test_case_{i}" for i in range(rows)],
                "outcome": ["passed"] * rows,
                "duration_s": [0.01 + (i % 97) / 1000 for i in range(rows)],
            }
        ),
    )
    start = time.perf_counter()
    with psycopg.connect(dsn) as conn:
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
            "RETURNING id",
            (project_id, f"big-{time.time_ns()}".encode()),
        ).fetchone()[0]  # type: ignore[index]
        store_run(
            conn,
            project_id=project_id,
            upload_id=upload_id,
            meta=RunMetadata(job="huge", labels={}, started_at=datetime.now(UTC)),
            merged=merge_reports([report]),
        )
        conn.commit()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=7)
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--jobs", type=int, default=4)
    parser.add_argument("--big", type=int, default=300_000)
    parser.add_argument("--reads", type=int, default=15)
    parser.add_argument("--analyze", action="store_true", help="ANALYZE before the first read")
    args = parser.parse_args()

    from app.db.engine import make_engine
    from app.db.projects import create_project
    from app.demo_load import DemoSize, load_demo
    from app.services.project_reads import SharedFrames

    size = DemoSize(days=args.days, tests=args.tests, jobs=args.jobs, pipelines_per_day=1)
    with scratch_database() as (url, dsn):
        engine = make_engine(url)
        with engine.begin() as conn:
            project = create_project(conn, "bench", public=True)
        loaded = load_demo(dsn, project.id, size)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
        shared = SharedFrames()
        page_reads(engine, project.id, args.days, shared)  # warm: imports, kept frames
        commit_s = big_commit(dsn, project.id, args.big)
        if args.analyze:
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("ANALYZE")
        first_s = page_reads(engine, project.id, args.days, shared)
        steady = [page_reads(engine, project.id, args.days, shared) for _ in range(args.reads)]
        after_small = []
        for _ in range(max(3, args.reads // 5)):
            store_upload(dsn, project.id)
            after_small.append(page_reads(engine, project.id, args.days, shared))
        engine.dispose()
    p50 = statistics.median(steady)
    small = statistics.median(after_small)
    print(f"history {loaded:,} results; one commit of {args.big:,} results in {commit_s:.1f} s")
    print(f"first read after the big commit {first_s * 1000:8.0f} ms")
    print(f"steady read p50                 {p50 * 1000:8.0f} ms")
    print(f"first read after a small upload {small * 1000:8.0f} ms (p50)")
    print(f"first / steady p50 {first_s / p50:.0f}x; first / small-upload {first_s / small:.1f}x")


if __name__ == "__main__":
    main()
