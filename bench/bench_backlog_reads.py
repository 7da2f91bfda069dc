"""What a backlog of runs not compacted yet costs the pages that read a project.

    .venv/bin/python -m bench.bench_backlog_reads [--results 100000] [--backlogs 1,8,32,128]
        [--rounds 3]

A worker busy with its queue adds runs to the per-test rollups only every 128 uploads
(ingest.worker); until then every per-test read adds those runs' results up again. For each
backlog size K: K uploads are stored and left not compacted (a job's latest run stored again
through the real store, jobs picked by a seeded generator), each page's first request is
timed; then the backlog is compacted, one more upload is stored and compacted, and each page's
first request is timed again. Printed, medians over --rounds rounds: ms pending / compacted,
the ratio, and the backlog's results. In-process (ASGI) with the read warmer off, so nothing
compacts or refreshes behind the requests; the read warmer's bound
(app.services.read_warmer.READ_BACKLOG_RESULTS) is chosen from these figures. (The REST
rollups are left out: after the pages, under the same data version, they would be served
from what the pages kept.)
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from urllib.parse import quote

from bench.bench_pages import demo_size
from bench.common import augmix_nodeid, bench_project, scratch_database, store_upload


def first_requests(client: object, pages: dict[str, str]) -> dict[str, float]:
    """Seconds of one GET of each page, failing on non-200."""
    get = client.get  # type: ignore[attr-defined]
    out = {}
    for name, path in pages.items():
        start = time.perf_counter()
        response = get(path)
        out[name] = time.perf_counter() - start
        assert response.status_code == 200, (path, response.status_code)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", type=int, default=100_000, help="size of the history")
    parser.add_argument("--backlogs", default="1,8,32,128", help="backlog sizes, in runs")
    parser.add_argument("--seed", type=int, default=0, help="seed of the uploaded jobs' picks")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per backlog size")
    args = parser.parse_args()

    import psycopg
    from fastapi.testclient import TestClient

    from app.db.engine import make_engine
    from app.factory import create_app
    from app.settings import Settings
    from demo.synthetic import TRANSFORMS_FILE
    from ingest.rollup_compaction import backlog_results

    pick = random.Random(args.seed)
    with scratch_database(None) as (url, dsn):
        engine = make_engine(url)
        project, _ = bench_project(engine, dsn, demo_size(args.results), None)
        nodeid = augmix_nodeid(engine, project.id)
        slug = project.slug
        pages = {
            "time": f"/p/{slug}/time",
            "file": f"/p/{slug}/files/{TRANSFORMS_FILE}",
            "test": f"/p/{slug}/test?nodeid={quote(nodeid)}",
        }
        settings = Settings(database_url=url, warm_reads=False)
        with TestClient(create_app(settings, engine)) as client:
            first_requests(client, pages)  # cold reads out of the way
            print(f"{'backlog':>8}{'results':>9}   " + "".join(f"{n:>22}" for n in pages))
            print(f"{'':>17}   " + "".join(f"{'pending/compacted ms':>22}" for _ in pages))
            for backlog in (int(k) for k in args.backlogs.split(",")):
                rounds: list[tuple[dict[str, float], dict[str, float]]] = []
                for _ in range(args.rounds):
                    for i in range(backlog):
                        store_upload(dsn, project.id, backlog=i > 0, pick=pick)
                    with psycopg.connect(dsn) as conn:
                        results = backlog_results(conn, project.id)
                    before = first_requests(client, pages)
                    store_upload(dsn, project.id, compact=True, pick=pick)
                    rounds.append((before, first_requests(client, pages)))
                pending = {n: statistics.median(r[0][n] for r in rounds) for n in pages}
                compacted = {n: statistics.median(r[1][n] for r in rounds) for n in pages}
                cells = "".join(
                    f"{pending[n] * 1000:>9.0f} /{compacted[n] * 1000:>5.0f}"
                    f" ({pending[n] / compacted[n]:.1f}x)"
                    for n in pages
                )
                print(f"{backlog:>8}{results:>9,}   {cells}")
        engine.dispose()


if __name__ == "__main__":
    main()
