"""Server time of every dashboard page, against the REST endpoint that reads the same data.

    .venv/bin/python -m bench.bench_pages [--results 200000] [--requests 10] [--uploads 10]

Fills a throwaway database with the synthetic torchvision-like history (app.demo_load, the
real store path), then times each page in-process (ASGI, no network: server time only): the
first (cold) request, p50/p95 over --requests more calls, p50/p95 of the first request after
each of --uploads uploads (a job's latest run stored again through the real store, the jobs
picked by a seeded generator: the same uploads in every run) as an idle worker leaves it, its
per-test rollups compacted (`upload`), and read before the compaction (`pending`: a worker
still busy with its queue; bench_backlog_reads reads through larger backlogs), and
the ratio of the page's p50 to its REST baseline's p50 measured in the same run (what rendering
HTML and figures adds). The issue's real run is --results 10000000 (60 days x 10,000 tests x 16
jobs; about 3 minutes to load): add --keep-home DIR to load it once and rerun against it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path
from urllib.parse import quote

from bench.common import augmix_nodeid, bench_project, scratch_database, store_upload


def demo_size(results: int) -> object:
    """A synthetic history shape of about `results` results."""
    from app.demo_load import DemoSize
    from demo.synthetic import MIN_TESTS

    if results >= 5_000_000:
        days, jobs = 60, 16
    else:
        days, jobs = 14, 8
    tests = max(MIN_TESTS, round(results / (days * jobs)))
    return DemoSize(days=days, tests=tests, jobs=jobs, pipelines_per_day=1)


def timings(client: object, path: str, requests: int) -> tuple[float, list[float]]:
    """Seconds of a first GET, then of `requests` more, failing on non-200.

    The first request of a process reads and computes everything (cold); later ones reuse
    what the server keeps until the project's data changes (warm)."""
    get = client.get  # type: ignore[attr-defined]
    start = time.perf_counter()
    response = get(path)
    first = time.perf_counter() - start
    assert response.status_code == 200, (path, response.status_code, response.text[:300])
    out = []
    for _ in range(requests):
        start = time.perf_counter()
        response = get(path)
        out.append(time.perf_counter() - start)
        assert response.status_code == 200, path
    return first, out


def after_uploads(
    client: object,
    path: str,
    dsn: str,
    project_id: int,
    rounds: int,
    *,
    pending: int,
    pick: random.Random,
) -> list[float]:
    """Seconds of the first GET after each of `rounds` uploads (a job's latest run stored again:
    real store), with the last `pending` runs not compacted yet (0: compacted as an idle worker
    leaves them): what a maintainer waits for on a project that CI keeps uploading to."""
    get = client.get  # type: ignore[attr-defined]
    out = []
    for _ in range(rounds):
        store_upload(dsn, project_id, compact=pending == 0, pick=pick)
        for _ in range(pending - 1):
            store_upload(dsn, project_id, backlog=True, pick=pick)
        start = time.perf_counter()
        response = get(path)
        out.append(time.perf_counter() - start)
        assert response.status_code == 200, path
    return out


def p95(values: list[float]) -> float:
    """Nearest-rank 95th percentile."""
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 95 // 100) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", type=int, default=200_000, help="size of the history")
    parser.add_argument("--requests", type=int, default=10, help="timed requests per page")
    parser.add_argument(
        "--uploads", type=int, default=10, help="uploads, each followed by a timed request"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the uploaded jobs' picks")

    parser.add_argument(
        "--keep-home", type=Path, help="keep the database there; a later run reuses its history"
    )
    args = parser.parse_args()
    # The jobs uploaded: a generator of their own (the app's code draws from the module's).
    pick = random.Random(args.seed)

    from fastapi.testclient import TestClient

    from app.db.engine import make_engine
    from app.factory import create_app
    from app.settings import Settings
    from demo.synthetic import TRANSFORMS_FILE

    size = demo_size(args.results)
    with scratch_database(args.keep_home) as (url, dsn):
        engine = make_engine(url)
        project, _ = bench_project(engine, dsn, size, args.keep_home)
        nodeid = augmix_nodeid(engine, project.id)
        slug = project.slug
        api = f"/api/v1/projects/{slug}"
        # Each page against the REST read it is built on (the projects list has none).
        cases = [
            ("projects", "/projects", "/healthz"),
            ("overview", f"/p/{slug}", "/pipelines"),
            ("time", f"/p/{slug}/time", "/rollups?by=test&within=function&limit=600"),
            ("file", f"/p/{slug}/files/{TRANSFORMS_FILE}", "/rollups?by=function"),
            ("test", f"/p/{slug}/test?nodeid={quote(nodeid)}", "/rollups?by=test"),
            ("recommendations", f"/p/{slug}/recommendations", "/recommendations/split"),
        ]
        settings = Settings(database_url=url)
        with TestClient(create_app(settings, engine)) as client:
            print(f"{'page':<16}{'cold ms':>9}{'p50 ms':>9}{'p95 ms':>9}{'upload p50':>12}"
                  f"{'upload p95':>12}{'pending p50':>13}{'pending p95':>13}   "
                  f"{'REST baseline':<22}{'p50 ms':>9}{'page/REST':>11}")  # fmt: skip
            for name, page, baseline in cases:
                cold, page_t = timings(client, page, args.requests)
                uploaded = after_uploads(
                    client, page, dsn, project.id, args.uploads, pending=0, pick=pick
                )
                pending = after_uploads(
                    client, page, dsn, project.id, args.uploads, pending=1, pick=pick
                )
                base_url = baseline if baseline.startswith("/healthz") else api + baseline
                base_p50 = statistics.median(timings(client, base_url, args.requests)[1])
                page_p50 = statistics.median(page_t)
                print(
                    f"{name:<16}{cold * 1000:>9.0f}{page_p50 * 1000:>9.0f}"
                    f"{p95(page_t) * 1000:>9.0f}{statistics.median(uploaded) * 1000:>12.0f}"
                    f"{p95(uploaded) * 1000:>12.0f}{statistics.median(pending) * 1000:>13.0f}"
                    f"{p95(pending) * 1000:>13.0f}   "
                    f"{baseline:<22.22}{base_p50 * 1000:>9.0f}"
                    f"{page_p50 / base_p50:>10.2f}x"
                )
        engine.dispose()


if __name__ == "__main__":
    main()
