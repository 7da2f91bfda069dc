"""The first rollup read after a large commit, against the steady reads of the same run.

    .venv/bin/python -m bench.bench_first_read [--tests 2000 --days 7 --jobs 4]
        [--big 300000] [--reads 15] [--analyze]

Loads a small history through the real store (analyzed, as autovacuum leaves a settled
database), then stores ONE run of `--big` new results in one transaction through the real
ingest path (store_run, as the worker does), as a CI job of a very large
suite does. Times the first rollup read right after that commit (a page's rollups, nothing
kept), then the same reads `--reads` times (steady: kept frames) and cold after a small upload
(the usual first read), and prints the first read as a ratio to the steady p50. Then the
same with the read warmer running: two more big commits, the time from commit to the page's
answers refreshed, a read after that refresh, and a read issued at once (it waits for the
refresh in flight rather than computing a second time). `--analyze`
runs ANALYZE between the commit and the first read: fresh planner statistics, to tell a bad
plan from the cost itself.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import psycopg

from bench.common import done_upload, scratch_database, store_upload

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
        upload_id = done_upload(conn, project_id, f"big-{time.time_ns()}")
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
        warmed = warmed_reads(engine, dsn, project.id, args, shared)
        engine.dispose()
    p50 = statistics.median(steady)
    small = statistics.median(after_small)
    print(f"history {loaded:,} results; one commit of {args.big:,} results in {commit_s:.1f} s")
    print(f"first read after the big commit {first_s * 1000:8.0f} ms")
    print(f"steady read p50                 {p50 * 1000:8.0f} ms")
    print(f"first read after a small upload {small * 1000:8.0f} ms (p50)")
    print(f"first / steady p50 {first_s / p50:.0f}x; first / small-upload {first_s / small:.1f}x")
    print("with the read warmer (refreshes kept answers after each commit):")
    print(f"  commit to answers refreshed     {warmed.refresh_s * 1000:8.0f} ms (off requests)")
    print(
        f"  first read after the refresh    {warmed.after_s * 1000:8.0f} ms"
        f" ({warmed.after_s / p50:.1f}x steady p50; unwarmed: {first_s / p50:.0f}x)"
    )
    print(
        f"  read issued at once             {warmed.at_once_s * 1000:8.0f} ms"
        f" ({warmed.at_once_s / warmed.refresh_s:.2f}x the refresh: it waits for it)"
    )


@dataclass(frozen=True)
class Warmed:
    """The first read after a big commit, with the read warmer running."""

    refresh_s: float  # from the commit's end to the page's answers kept under the new version
    after_s: float  # a read once the refresh is done
    at_once_s: float  # a read issued right after a commit (it joins the refresh in flight)


def warmed_reads(engine: Any, dsn: str, project_id: int, args: Any, shared: Any) -> Warmed:
    """Two more big commits with a warmer: one read after its refresh, one read at once."""
    from app.services.project_reads import data_version
    from app.services.read_warmer import ReadWarmer

    warmer = ReadWarmer(engine, dsn=dsn, shared=shared)
    warmer.start()
    try:
        if not warmer.wait_listening(30):
            raise SystemExit("the read warmer did not start listening")
        big_commit(dsn, project_id, args.big)
        committed = time.perf_counter()
        with engine.connect() as conn:
            version = data_version(conn, project_id)
        if not warmer.wait_warmed(project_id, version, 600):
            raise SystemExit("the read warmer did not refresh within 600 s")
        refresh_s = time.perf_counter() - committed
        after_s = page_reads(engine, project_id, args.days, shared)
        big_commit(dsn, project_id, args.big)
        at_once_s = page_reads(engine, project_id, args.days, shared)
    finally:
        warmer.stop()
    return Warmed(refresh_s=refresh_s, after_s=after_s, at_once_s=at_once_s)


if __name__ == "__main__":
    main()
