"""Server time of `GET .../changes` and the "What changed" page on a large history.

    .venv/bin/python -m bench.bench_changes_page [--results 9600000] [--extra-changes 100000]
        [--requests 10] [--keep-home DIR [--redetect]]

Fills a throwaway database (or reuses --keep-home) with the synthetic history of bench_pages
(app.demo_load, the real store path; 9.6M results = 60 days x 10,000 tests x 16 jobs), detects
its changes the way a worker catches up (every default-branch run marked, then
`retry_backlog`: each run's stored results read back and pushed, in run order), and adds
`--extra-changes` stored changes spread over the cells' series (the synthetic history has
few lasting steps; a project with many is the listing's hard case). Then times, in-process
(ASGI, server time only), the first request and `--requests` more of the REST listing (plain
and filtered) and of the page, and prints the plan of the listing's query (EXPLAIN ANALYZE).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

from bench.bench_pages import demo_size, p95, timings
from bench.common import bench_project, scratch_database


def detect_history(dsn: str, project_id: int) -> tuple[int, float]:
    """Mark every default-branch run of the project and detect them all as the worker's retry
    pass does; (runs detected, seconds)."""
    from ingest.change_detection import default_branch, retry_backlog

    with psycopg.connect(dsn) as conn:
        branch = default_branch(conn, project_id)
        conn.execute(
            "INSERT INTO change_backlog (run_id, project_id, cell_id) SELECT id, project_id, "
            "cell_id FROM run WHERE project_id = %s AND branch = %s ON CONFLICT DO NOTHING",
            (project_id, branch),
        )
        conn.commit()
        start = time.perf_counter()
        done = retry_backlog(conn)
        return done, time.perf_counter() - start


def add_changes(dsn: str, project_id: int, count: int) -> None:
    """`count` more stored changes over the project's test series (copies of plausible rows:
    each cell's tests, a position each, runs and times from the cell's own runs)."""
    with psycopg.connect(dsn) as conn:
        conn.execute(
            """
            WITH runs AS (
                SELECT cell_id, array_agg(id ORDER BY id) AS ids,
                    array_agg(started_at ORDER BY id) AS ats,
                    array_agg(commit_sha ORDER BY id) AS shas
                FROM run WHERE project_id = %(p)s GROUP BY cell_id
            ), series AS (
                SELECT r.cell_id, tc.id AS test_id, r.ids, r.ats, r.shas,
                    row_number() OVER () AS n
                FROM runs r CROSS JOIN test_case tc WHERE tc.project_id = %(p)s
            ), picked AS (
                SELECT *, 2 + (n %% (cardinality(ids) - 9))::int AS pos
                FROM series WHERE cardinality(ids) >= 10 ORDER BY random() LIMIT %(count)s
            )
            INSERT INTO duration_change (project_id, cell_id, kind, key, position,
                run_id_before, run_id_after, confirmed_run_id, commit_before, commit_after,
                at_before, at_after, runs_before, runs_after, median_before_s, median_after_s,
                spread_before_s, spread_after_s, noise, z, between_commits, between_complete,
                state)
            SELECT %(p)s, cell_id, 'test', test_id::text, pos + 1000, ids[pos], ids[pos + 1],
                ids[pos + 7], shas[pos], shas[pos + 1], ats[pos], ats[pos + 1], pos, 7,
                1.0 + (n %% 97) / 10.0, 1.3 + (n %% 89) / 7.0, 0.05, 0.06, 0.04,
                6.0 + (n %% 5), NULL, false,
                (ARRAY['open', 'acknowledged', 'resolved'])[1 + (n %% 3)::int]
            FROM picked
            ON CONFLICT DO NOTHING
            """,
            {"p": project_id, "count": count},
        )
        conn.execute("ANALYZE duration_change")
        conn.commit()


def explain(dsn: str, project_id: int, query: object) -> list[str]:
    """The plan of load_changes' statement for `query` (EXPLAIN ANALYZE, BUFFERS)."""
    from app.db.changes import changes_statement

    statement, params = changes_statement(project_id, query)  # type: ignore[arg-type]
    with psycopg.connect(dsn) as conn:
        plan = sql.SQL("EXPLAIN (ANALYZE, BUFFERS) {}").format(statement)
        return [str(r[0]) for r in conn.execute(plan, params).fetchall()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", type=int, default=9_600_000, help="size of the history")
    parser.add_argument("--extra-changes", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=10, help="timed requests per path")
    parser.add_argument("--keep-home", type=Path, help="keep the database there to reuse it")
    parser.add_argument(
        "--redetect", action="store_true", help="detect a kept history's changes again"
    )
    args = parser.parse_args()

    from fastapi.testclient import TestClient

    from app.db.changes import ChangeQuery
    from app.db.engine import make_engine
    from app.factory import create_app
    from app.settings import Settings

    size = demo_size(args.results)
    with scratch_database(args.keep_home) as (url, dsn):
        engine = make_engine(url)
        project, kept = bench_project(engine, dsn, size, args.keep_home)
        if not kept or args.redetect:
            with psycopg.connect(dsn) as conn:
                conn.execute("TRUNCATE change_state, change_log, change_backlog, duration_change")
            done, seconds = detect_history(dsn, project.id)
            print(f"detected {done} runs from their stored results in {seconds:.1f} s")
            add_changes(dsn, project.id, args.extra_changes)
        with psycopg.connect(dsn) as conn:
            counts = conn.execute(
                "SELECT (SELECT count(*) FROM test_result), (SELECT count(*) FROM run), "
                "(SELECT count(*) FROM duration_change), (SELECT count(*) FROM duration_change "
                "WHERE position < 1000), (SELECT max(at_after)::date - 7 FROM duration_change)"
            ).fetchone()
            job = conn.execute("SELECT job FROM cell ORDER BY id LIMIT 1").fetchone()
            # A change of each kind, detected ones first (an added one's series is its test
            # in its cell's runs all the same).
            detected_ids = dict(
                conn.execute(
                    "SELECT DISTINCT ON (kind) kind, id FROM duration_change "
                    "ORDER BY kind, position >= 1000, id"
                ).fetchall()
            )
            # A test with no stored change: its filter reads the most rows to find none.
            quiet = ("tests/test_unchanged.py::test_none",)
        assert counts is not None
        assert job is not None
        assert quiet is not None
        results, runs, changes, detected, week_ago = counts
        print(
            f"{results:,} results, {runs} runs, {changes:,} stored changes ({detected} "
            f"detected in the history); load average {os.getloadavg()[0]:.1f}"
        )
        api = f"/api/v1/projects/{project.slug}/changes"
        cases = [
            ("REST, no filter", api),
            ("REST, kind=test", f"{api}?kind=test"),
            ("REST, state=open", f"{api}?state=open"),
            ("REST, since a week", f"{api}?since={week_ago}"),
            ("REST, one job", f"{api}?job={job[0]}"),
            ("REST, a quiet test", f"{api}?test={quote(quiet[0])}"),
            ("page", f"/p/{project.slug}/changes"),
            ("page, kind=file", f"/p/{project.slug}/changes?kind=file"),
            *(
                (f"{kind} series", f"{api}/{change_id}/series")
                for kind, change_id in sorted(detected_ids.items())
            ),
            *(
                (f"page, a {kind}", f"/p/{project.slug}/changes/{change_id}")
                for kind, change_id in sorted(detected_ids.items())[:1]
            ),
        ]
        settings = Settings(database_url=url)
        with TestClient(create_app(settings, engine)) as client:
            print(f"{'path':<22}{'first ms':>10}{'p50 ms':>9}{'p95 ms':>9}")
            for name, path in cases:
                first, warm = timings(client, path, args.requests)
                print(
                    f"{name:<22}{first * 1000:>10.0f}{statistics.median(warm) * 1000:>9.0f}"
                    f"{p95(warm) * 1000:>9.0f}"
                )
        for query in (ChangeQuery(), ChangeQuery(state="open", kind="test")):
            print(f"plan of load_changes({query}):")
            for line in explain(dsn, project.id, query):
                print("   ", line)
        engine.dispose()


if __name__ == "__main__":
    main()
