"""The worst split-plan question the API and `laptime plan` allow, against the default one.

The job range is capped at MAX_JOBS (64) and planning stops at PLAN_TIME_LIMIT_S; this
measures what the largest allowed range costs on a large cell (time and peak memory), as a
ratio to the default range (2-6) measured in the same run, and shows the time limit holding.

    .venv/bin/python -m bench.bench_plan_bounds            # 50,000 tests, about a minute
    .venv/bin/python -m bench.bench_plan_bounds --quick    # 10,000 tests
    .venv/bin/python -m bench.bench_plan_bounds --http     # through the API, demo history
"""

from __future__ import annotations

import argparse
import resource
import time

import numpy as np
import pandas as pd

from analysis.split.options import MAX_JOBS
from analysis.split.plan import Granularity, SplitOptions, plan_splits
from app.work_limits import PLAN_TIME_LIMIT_S, stop_after
from bench.common import one_run


def cell(n: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One job's run of n lognormal tests over 500 files of 7 classes each."""
    weights = np.random.default_rng(7).lognormal(0.0, 1.5, n)
    ids = [f"tests/test_m{i % 500:03d}.py::TestC{i % 7}::test_{i}" for i in range(n)]
    return one_run(ids, weights)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(
    results: pd.DataFrame, runs: pd.DataFrame, granularity: Granularity, jobs: tuple[int, int]
) -> float:
    start = time.perf_counter()
    plan = plan_splits(
        results,
        runs,
        SplitOptions(jobs=jobs, granularity=granularity),
        should_stop=stop_after(PLAN_TIME_LIMIT_S),
    )
    elapsed = time.perf_counter() - start
    print(
        f"  {granularity:<5} jobs {jobs[0]}-{jobs[1]}: {elapsed:6.2f} s, "
        f"{len(plan.pareto)} counts, complete {plan.complete}, peak RSS {peak_rss_mib():.0f} MiB"
    )
    return elapsed


def over_http(results: int) -> None:
    """GET recommendations/split on a demo history: the default range, then the widest."""
    from fastapi.testclient import TestClient

    from app.db.engine import make_engine
    from app.db.projects import create_project
    from app.demo_load import load_demo
    from app.factory import create_app
    from app.settings import Settings
    from bench.bench_pages import demo_size
    from bench.common import scratch_database

    with scratch_database() as (url, dsn):
        engine = make_engine(url)
        with engine.begin() as conn:
            project = create_project(conn, "bench", public=True)
        stored = load_demo(dsn, project.id, demo_size(results))  # type: ignore[arg-type]
        print(f"stored {stored:,} results; peak RSS {peak_rss_mib():.0f} MiB")
        api = f"/api/v1/projects/{project.slug}/recommendations/split"
        with TestClient(create_app(Settings(database_url=url), engine)) as client:
            times = {}
            for granularity in ("auto", "test"):
                for jobs in ("2-6", f"1-{MAX_JOBS}"):
                    start = time.perf_counter()
                    response = client.get(api, params={"jobs": jobs, "granularity": granularity})
                    times[granularity, jobs] = elapsed = time.perf_counter() - start
                    assert response.status_code == 200, response.text[:300]
                    plan = response.json()
                    print(
                        f"  {granularity:<5} jobs {jobs:>5}: {elapsed:6.2f} s, "
                        f"{plan['estimates']['tests']} tests, complete {plan['complete']}, "
                        f"peak RSS {peak_rss_mib():.0f} MiB"
                    )
                ratio = times[granularity, f"1-{MAX_JOBS}"] / times[granularity, "2-6"]
                print(f"  ratio worst / default: {ratio:.1f}x")
        engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10,000 tests instead of 50,000")
    parser.add_argument("--http", action="store_true", help="through the API on a demo history")
    parser.add_argument("--results", type=int, default=200_000, help="demo history size (--http)")
    args = parser.parse_args()
    if args.http:
        over_http(args.results)
        return
    n = 10_000 if args.quick else 50_000
    results, runs = cell(n)
    print(f"{n} tests; limit {PLAN_TIME_LIMIT_S:.0f} s; peak RSS at start {peak_rss_mib():.0f} MiB")
    for granularity in ("auto", "test"):
        base = measure(results, runs, granularity, (2, 6))
        worst = measure(results, runs, granularity, (1, MAX_JOBS))
        print(f"  ratio worst / default: {worst / base:.1f}x")


if __name__ == "__main__":
    main()
