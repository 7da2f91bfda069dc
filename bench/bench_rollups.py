"""Rollup endpoints at scale, and rollup tables against the raw results table.

    .venv/bin/python -m bench.bench_rollups [--days 60 --tests 10000 --jobs 16] [--requests 20]

Loads a synthetic history through the real store (the issue's 10 million results are the
defaults above: 60 days x 10,000 tests x 16 jobs), then times each rollup endpoint over HTTP
on a real uvicorn server (p50/p95 of --requests calls; after the first, answers come from the
frames kept until the next ingest), each first request right after an upload (a job's latest
run stored again through the real store, not compacted yet), the same rollups cold in-process
(nothing kept), and the same by-file aggregate over the raw results and over the rollup tables.
`--keep-home DIR` keeps the database so the next run skips the load.

Before (the figures README.md quotes; tests/test_before_figures.py checks them):
- `31-59 ms`: first request after an upload, p95, `by=job`/`by=label:*`, the code at commit
  d9ca4c5d4673 (the parent of 53651f6, per-test figures),
  `python -m bench.bench_rollups --days 30 --tests 5000 --jobs 8 --requests 10`.
- `453-581 ms`: the same, the code at commit 910d1eb52d1e (the parent of d23ec69, the weekly
  (test, cell) rollup),
  `python -m bench.bench_rollups --days 30 --tests 5000 --jobs 8 --requests 10`.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg

from bench.common import scratch_database, store_upload

ENDPOINTS: tuple[tuple[str, dict[str, object]], ...] = (
    ("rollups", {"by": "file"}),
    ("rollups", {"by": "job"}),
    ("rollups", {"by": "label:python"}),
    ("rollups", {"by": "function"}),
    ("rollups", {"by": "marker"}),
    ("rollups", {"by": "test", "limit": 100}),
    ("pipelines", {}),
)

RAW_BY_FILE = """
SELECT t.file, sum(r.duration_s), count(*) FROM test_result r JOIN test_case t ON t.id = r.test_id
WHERE r.project_id = %(p)s AND r.day >= %(since)s GROUP BY t.file
"""
ROLLUP_BY_FILE = """
SELECT file, sum(total_s), sum(runs) FROM rollup_file_daily
WHERE project_id = %(p)s AND day >= %(since)s GROUP BY file
"""


def print_table(title: str, measure: Callable[[str, dict[str, object]], list[float]]) -> None:
    """p50 and p95 (nearest rank) of `measure(path, params)` milliseconds for every endpoint."""
    print(f"{title:32} {'p50 ms':>8} {'p95 ms':>8}")
    for path, params in ENDPOINTS:
        times = sorted(measure(path, params))
        p95 = times[min(len(times) - 1, round(0.95 * len(times)) - 1)]
        label = path + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")
        print(f"{label:32} {statistics.median(times):8.0f} {p95:8.0f}")


def print_cold_timings(engine: Any, project_id: int, days: int, requests: int) -> None:
    """The same rollups in-process with nothing kept between calls: the first request after
    an ingest pays this (the HTTP numbers above are served from the shared frames)."""
    from app.services.project_reads import (
        FrameCache,
        project_pipelines,
        project_rollup,
        window_filters,
    )

    filters = window_filters(days)
    with engine.connect() as conn:

        def cold(path: str, params: dict[str, object]) -> list[float]:
            times = []
            for _ in range(max(3, requests // 2)):
                t0 = time.perf_counter()
                if path == "pipelines":
                    project_pipelines(conn, project_id, filters)
                else:
                    limit = params.get("limit")
                    project_rollup(
                        conn,
                        project_id,
                        filters,
                        by=str(params["by"]),
                        limit=int(str(limit)) if limit is not None else None,
                        cache=FrameCache(),
                    )
                times.append((time.perf_counter() - t0) * 1000)
            return times

        print_table("cold (no kept frames)", cold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=16)
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument(
        "--keep-home", type=Path, help="keep the database there; a later run reuses its history"
    )
    args = parser.parse_args()

    import uvicorn

    from app.db.engine import make_engine
    from app.db.projects import create_project, create_token, get_project
    from app.demo_load import DemoSize, load_demo
    from app.factory import create_app
    from app.settings import Settings

    size = DemoSize(days=args.days, tests=args.tests, jobs=args.jobs, pipelines_per_day=1)
    with scratch_database(args.keep_home) as (url, dsn):
        engine = make_engine(url)
        with engine.begin() as conn:
            kept = get_project(conn, "bench")
            project = kept or create_project(conn, "bench", public=True)
            token = create_token(conn, project, "read")
        if kept is None:
            start = time.perf_counter()
            loaded = load_demo(dsn, project.id, size)
            load_s = time.perf_counter() - start
            print(f"loaded {loaded:,} results in {load_s:.0f} s ({loaded / load_s:,.0f} /s)")
            with psycopg.connect(dsn, autocommit=True) as conn:
                conn.execute("VACUUM ANALYZE")
        else:
            print(f"reusing the history kept in {args.keep_home} (its size flags win)")

        server = uvicorn.Server(
            uvicorn.Config(
                create_app(Settings(database_url=url), engine), port=0, log_level="error"
            )
        )
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        port = server.servers[0].sockets[0].getsockname()[1]
        base = f"http://127.0.0.1:{port}/api/v1/projects/{project.slug}"
        headers = {"Authorization": f"Bearer {token}"}
        window = {"days": args.days}
        with httpx.Client(headers=headers, timeout=120) as client:

            def timed_get(path: str, params: dict[str, object]) -> float:
                t0 = time.perf_counter()
                response = client.get(f"{base}/{path}", params={**window, **params})
                elapsed = (time.perf_counter() - t0) * 1000
                response.raise_for_status()
                return elapsed

            print_table(
                "endpoint",
                lambda path, params: [timed_get(path, params) for _ in range(args.requests)],
            )

            # The realistic first request: right after an upload moved the data version on.
            def after_uploads(path: str, params: dict[str, object]) -> list[float]:
                times = []
                for _ in range(max(3, args.requests // 4)):
                    store_upload(dsn, project.id)
                    times.append(timed_get(path, params))
                return times

            print_table("after an upload (first request)", after_uploads)
        server.should_exit = True
        thread.join(timeout=10)
        print_cold_timings(engine, project.id, args.days, args.requests)

        since = (datetime.now(UTC) - timedelta(days=args.days)).date()
        with psycopg.connect(dsn) as conn:
            timings = {}
            for name, sql in (("raw", RAW_BY_FILE), ("rollup", ROLLUP_BY_FILE)):
                runs = []
                for _ in range(3):
                    t0 = time.perf_counter()
                    conn.execute(sql, {"p": project.id, "since": since}).fetchall()
                    runs.append(time.perf_counter() - t0)
                timings[name] = statistics.median(runs)
        print(
            f"by-file aggregate: raw results {timings['raw'] * 1000:.0f} ms, rollup table "
            f"{timings['rollup'] * 1000:.0f} ms, ratio {timings['raw'] / timings['rollup']:.0f}x"
        )
        engine.dispose()


if __name__ == "__main__":
    main()
