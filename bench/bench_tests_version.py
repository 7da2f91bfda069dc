"""What reading the tests' data version costs, by number of tests: O(1) now.

    .venv/bin/python -m bench.bench_tests_version [--small 1000] [--large 100000] [--reads 300]

Two projects in one throwaway embedded database, one with `--small` and one with `--large`
test cases; times `tests_version` (one primary-key read of test_case_version, bumped by the
triggers on test_case) on each, median of `--reads` reads, and, in the same run, the scan it
replaced (`count(*), sum(xmin)` over the project's test_case rows). Prints both ratios large /
small: near 1 means the read does not grow with the number of tests. Also what the trigger
adds to an ingest's insert of `--large` new tests (with and without it, rolled back).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from sqlalchemy import Connection, Engine, text

from app.db.engine import make_engine
from app.db.projects import create_project
from app.db.repository import tests_version
from bench.common import best_of, scratch_database

OLD_SCAN = (
    "SELECT count(*), coalesce(sum(xmin::text::bigint), 0) FROM test_case WHERE project_id = :p"
)


def _project_with_tests(conn: Connection, slug: str, tests: int) -> int:
    """A project holding `tests` test cases (inserted in one statement, as an ingest does)."""
    project = create_project(conn, slug)
    conn.execute(
        text(
            "INSERT INTO test_case (id, project_id, nodeid, file, function, first_seen) "
            "SELECT :p * 10000000 + i, :p, 'tests/test_' || (i % 500) || '.py::test_' || i, "
            "'tests/test_' || (i % 500) || '.py', 'test_' || i, current_date "
            "FROM generate_series(1, :n) AS i"
        ),
        {"p": project.id, "n": tests},
    )
    return project.id


def _insert_cost_ms(engine: Engine, tests: int) -> dict[bool, float]:
    """Median ms of inserting `tests` test cases with and without the version trigger."""
    times: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(5):
        for triggered in (True, False):
            with engine.connect() as conn:
                if not triggered:
                    conn.execute(text("ALTER TABLE test_case DISABLE TRIGGER USER"))
                start = time.perf_counter()
                _project_with_tests(conn, f"w{len(times[triggered])}{triggered}", tests)
                times[triggered].append((time.perf_counter() - start) * 1e3)
                conn.rollback()
    return {k: statistics.median(v) for k, v in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--large", type=int, default=100_000)
    parser.add_argument("--reads", type=int, default=300)
    args = parser.parse_args(argv)
    with scratch_database() as (url, _):
        engine = make_engine(url)
        try:
            with engine.begin() as conn:
                small = _project_with_tests(conn, "small", args.small)
                large = _project_with_tests(conn, "large", args.large)
            with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM ANALYZE test_case"))
        except Exception:
            engine.dispose()
            raise
        with engine.connect() as conn:
            times = {}
            for name, project_id in (("small", small), ("large", large)):
                times[name, "version"] = best_of(
                    args.reads, lambda p=project_id: tests_version(conn, p)
                )[0]
                times[name, "scan"] = best_of(
                    args.reads, lambda p=project_id: conn.execute(text(OLD_SCAN), {"p": p}).one()
                )[0]
            write_ms = _insert_cost_ms(engine, args.large)
        engine.dispose()
    print(
        f"inserting {args.large:,} new tests in one statement: {write_ms[True]:.1f} ms with the "
        f"version trigger, {write_ms[False]:.1f} ms without (median of 5, rolled back)"
    )
    for kind, label in (("version", "tests_version (counter)"), ("scan", "count/sum(xmin) scan")):
        small_ms, large_ms = times["small", kind] * 1e3, times["large", kind] * 1e3
        print(
            f"{label:>24}: {args.small:,} tests {small_ms:.3f} ms, {args.large:,} tests "
            f"{large_ms:.3f} ms, ratio {large_ms / small_ms:.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
