"""Scale-out on this machine: ingest rows/s by number of ingest workers, upload and read
request rates by number of web processes, and storage per million results.

    .venv/bin/python -m bench.bench_scaling [--uploads 40] [--tests 5000] [--projects 1 4]

Every phase runs real processes on a scratch embedded Postgres:
- ingest: M = 1..--max-workers `laptime worker` processes are started and ready, then
  --uploads JUnit reports of --tests testcases (the same tests with durations of their own,
  as CI sends them; round robin over 1, then 4 projects: --projects) are queued in one
  transaction; timed from that commit until every upload is `done`. Parse + store + rollups:
  what a worker really does per upload. One project's ingests of one week queue on a lock
  (ingest/store.py, the weekly rollups), so the spread over projects shows what it costs.
- web: `laptime serve --ingest-workers 0 --workers N` for N = 1, 2; 4 client processes of 4
  threads POST --web-uploads small reports (100 testcases), then GET a rollup
  --web-reads times (answered from kept frames after the first). Rates per second.
- storage: a synthetic history (demo.synthetic through the real store) of --days days x
  --jobs jobs x 3 pipelines a day x --tests tests; bytes of each table with its indexes and
  TOAST (pg_total_relation_size, partitions summed) after VACUUM, per million results; the
  raw reports kept per result come from the ingest phase (upload_file).
The load average is printed before and after: the machine is shared, so read the ratios.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx
import psycopg

from bench.common import count, poll, scratch_database, start_serve, start_workers
from tests.factories import junit_xml

CLIENT_PROCESSES = 4
CLIENT_THREADS = 4

# Which table each stored relation belongs to, for the storage breakdown.
TABLE_GROUPS = {
    "results": ("test_result",),
    "rollups": (
        "rollup_daily",
        "rollup_file_daily",
        "rollup_test_weekly",
        "rollup_file_weekly",
        "rollup_cell_weekly",
    ),
    "dictionary": ("test_case", "cell"),
    "runs": ("run",),
}


@dataclass
class IngestPhase:
    """One ingest measurement."""

    workers: int
    projects: int
    rows: int
    seconds: float

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds


def _uptime() -> str:
    with open("/proc/loadavg") as load:
        return "load average " + " ".join(load.read().split()[:3])


def _project(url: str, name: str, scope: str = "upload") -> tuple[object, str]:
    from app.db.engine import make_engine
    from app.db.projects import create_project, create_token

    engine = make_engine(url, pool_size=1)
    with engine.begin() as conn:
        project = create_project(conn, f"{name}-{time.time_ns()}")
        token = create_token(conn, project, scope)
    engine.dispose()
    return project, token


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for proc in procs:
        proc.wait(timeout=30)


def ingest_phase(
    url: str, dsn: str, workers: int, projects: int, args: argparse.Namespace
) -> IngestPhase:
    """Queue the uploads at once (round robin over `projects` projects) in front of `workers`
    ready workers; time the drain."""
    from app.db.engine import make_engine
    from app.db.uploads import IncomingFile, UploadMetadata, insert_upload

    owners = [_project(url, f"ingest{workers}-{projects}")[0] for _ in range(projects)]
    ids = [p.id for p in owners]  # type: ignore[attr-defined]
    reports = [
        junit_xml(args.tests, files=args.tests // 50, seed=workers * 1000 + i)
        for i in range(args.uploads)
    ]
    procs = start_workers(url, workers)
    try:
        engine = make_engine(url, pool_size=1)
        with engine.begin() as conn:
            for i, body in enumerate(reports):
                insert_upload(
                    conn,
                    owners[i % projects],  # type: ignore[arg-type]
                    [IncomingFile("junit.xml", body)],
                    UploadMetadata(job=f"job{i % 8}", pipeline=f"p{i // 8}"),
                    idempotency_key=None,
                    max_report_bytes=10**9,
                )
            start = time.perf_counter()
        engine.dispose()
        done = "SELECT count(*) FROM upload WHERE project_id = ANY(%s) AND status = 'done'"
        poll(lambda: count(dsn, done, ids) == args.uploads, 1800, "drain")
        seconds = time.perf_counter() - start
    finally:
        _stop(procs)
    rows = count(dsn, "SELECT count(*) FROM test_result WHERE project_id = ANY(%s)", ids)
    assert rows == args.uploads * args.tests, rows
    return IngestPhase(workers, projects, rows, seconds)


def _post_batch(base: str, token: str, client: int, uploads: int) -> int:
    """One client process: POST `uploads` distinct small reports from CLIENT_THREADS threads,
    each over one kept-alive connection (the client's own CPU stays small)."""
    bodies = [junit_xml(100, seed=client * 100_000 + i) for i in range(uploads)]

    def post(thread: int) -> None:
        with httpx.Client(
            base_url=base, timeout=60, headers={"Authorization": f"Bearer {token}"}
        ) as http:
            for i in range(thread, uploads, CLIENT_THREADS):
                answer = http.post(
                    "/api/v1/uploads",
                    files={"file": ("junit.xml", bodies[i])},
                    data={"job": f"job{client}", "pipeline": f"p{i}"},
                )
                answer.raise_for_status()

    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        list(pool.map(post, range(CLIENT_THREADS)))
    return uploads


def _get_batch(url: str, token: str, reads: int) -> int:
    """One client process: `reads` GETs of the same rollup over one connection per thread."""

    def read(_: int) -> None:
        with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {token}"}) as http:
            for _ in range(reads // CLIENT_THREADS):
                http.get(url).raise_for_status()

    with ThreadPoolExecutor(CLIENT_THREADS) as pool:
        list(pool.map(read, range(CLIENT_THREADS)))
    return reads // CLIENT_THREADS * CLIENT_THREADS


def _spread(fn: Callable[..., int], *per_client: tuple[object, ...]) -> tuple[int, float]:
    """Run fn once per client process at the same time; (requests done, seconds)."""
    with ProcessPoolExecutor(len(per_client)) as pool:
        pool.submit(int, 0).result()  # the processes are up before the clock starts
        start = time.perf_counter()
        done = sum(f.result() for f in [pool.submit(fn, *a) for a in per_client])
        return done, time.perf_counter() - start


def web_phase(url: str, dsn: str, web: int, args: argparse.Namespace) -> tuple[float, float]:
    """(uploads/s, rollup reads/s) of `laptime serve` with `web` web processes, no worker."""
    serve, base = start_serve(url, "--ingest-workers", "0", "--workers", str(web))
    try:
        _, token = _project(url, f"web{web}")
        per = args.web_uploads // CLIENT_PROCESSES
        # Unmeasured warm-up: every web process imports lazily and fills its pool.
        _spread(_post_batch, *[(base, token, 90 + c, 16) for c in range(CLIENT_PROCESSES)])
        sent, send_s = _spread(
            _post_batch, *[(base, token, c, per) for c in range(CLIENT_PROCESSES)]
        )
        slug, read_token = _read_access(url, dsn)
        rollup = f"{base}/api/v1/projects/{slug}/rollups?by=file&days=7"
        reads_each = args.web_reads // CLIENT_PROCESSES
        _spread(_get_batch, *[(rollup, read_token, CLIENT_THREADS)] * CLIENT_PROCESSES)
        read, read_s = _spread(_get_batch, *[(rollup, read_token, reads_each)] * CLIENT_PROCESSES)
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=30)
    return sent / send_s, read / read_s


def _read_access(url: str, dsn: str) -> tuple[str, str]:
    """(slug, read token) of the project the first ingest phase filled."""
    from app.db.engine import make_engine
    from app.db.projects import create_token, get_project

    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT p.slug FROM project p JOIN run r ON r.project_id = p.id ORDER BY r.id LIMIT 1"
        ).fetchone()
    assert row is not None, "the read phase needs the ingest phase's data"
    engine = make_engine(url, pool_size=1)
    with engine.begin() as conn:
        project = get_project(conn, row[0])
        assert project is not None
        token = create_token(conn, project, "read")
    engine.dispose()
    return project.slug, token


def table_bytes(dsn: str) -> dict[str, tuple[int, int]]:
    """(bytes, rows) of each table: heap + indexes + TOAST, partitions summed, after VACUUM."""
    tables = [t for group in TABLE_GROUPS.values() for t in group]
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        sizes: dict[str, tuple[int, int]] = {}
        for table in tables:
            # A partitioned parent holds nothing itself: its partitions are summed.
            row = conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(oid)), 0) FROM pg_class "
                "WHERE oid = %s::regclass "
                "OR oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = %s::regclass)",
                (table, table),
            ).fetchone()
            count = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
            sizes[table] = (int(row[0]) if row else 0, int(count[0]) if count else 0)
    return sizes


def count_ns_per_row(dsn: str, project_id: int) -> float:
    """Nanoseconds per row of counting a project's results (median of 5), the cost model of
    the per-request data version (a count over the project's runs)."""
    with psycopg.connect(dsn) as conn:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            rows, _ = conn.execute(  # type: ignore[misc]
                "SELECT count(*), max(run_id) FROM test_result WHERE project_id = %s",
                (project_id,),
            ).fetchone()
            times.append(time.perf_counter() - start)
    return sorted(times)[2] / rows * 1e9


def storage(args: argparse.Namespace) -> tuple[int, dict[str, tuple[int, int]], float]:
    """(results loaded, bytes and rows per table, ns per row counted) of a synthetic history."""
    from app.db.engine import make_engine
    from app.db.projects import create_project
    from app.demo_load import DemoSize, load_demo

    size = DemoSize(days=args.days, tests=args.tests, jobs=args.jobs, pipelines_per_day=3)
    with scratch_database() as (url, dsn):
        engine = make_engine(url, pool_size=1)
        with engine.begin() as conn:
            project = create_project(conn, "storage")
        engine.dispose()
        loaded = load_demo(dsn, project.id, size, until=datetime.now(UTC).date())
        sizes = table_bytes(dsn)
        count_ns = count_ns_per_row(dsn, project.id)
    return loaded, sizes, count_ns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--uploads", type=int, default=40, help="uploads per ingest phase")
    parser.add_argument("--tests", type=int, default=5000, help="testcases per upload")
    parser.add_argument("--max-workers", type=int, default=4)
    parser.add_argument(
        "--projects",
        type=int,
        nargs="+",
        default=[1, 4],
        help="ingest phases spread the uploads over this many projects (one set per value)",
    )
    parser.add_argument("--web-uploads", type=int, default=960)
    parser.add_argument("--web-reads", type=int, default=1920)
    parser.add_argument("--days", type=int, default=14, help="storage history days")
    parser.add_argument("--jobs", type=int, default=8, help="storage history jobs")
    parser.add_argument("--skip", nargs="*", default=[], choices=["ingest", "web", "storage"])
    args = parser.parse_args()
    print(f"start: {_uptime()}, {os.cpu_count()} CPUs")

    with scratch_database() as (url, dsn):
        if "ingest" not in args.skip:
            print(f"ingest: {args.uploads} uploads x {args.tests} testcases per phase")
            for projects in args.projects:
                phases = [
                    ingest_phase(url, dsn, m, projects, args)
                    for m in range(1, args.max_workers + 1)
                ]
                one = phases[0].rows_per_s
                for p in phases:
                    print(
                        f"  {projects} project(s), {p.workers} worker(s): {p.seconds:6.1f} s, "
                        f"{p.rows_per_s:8,.0f} rows/s (x{p.rows_per_s / one:.2f} of 1 worker), "
                        f"{p.rows_per_s / p.workers:8,.0f} rows/s per worker"
                    )
            raw = count(dsn, "SELECT sum(length(raw_gzip)) FROM upload_file")
            results = count(dsn, "SELECT count(*) FROM test_result")
            print(f"  raw reports kept (gzip): {raw / results:.1f} bytes per result")
            print(f"  after ingest: {_uptime()}")
        if "web" not in args.skip:
            rates = {web: web_phase(url, dsn, web, args) for web in (1, 2)}
            (up1, rd1), (up2, rd2) = rates[1], rates[2]
            print(f"web ({CLIENT_PROCESSES} client processes x {CLIENT_THREADS} threads):")
            print(f"  1 web process : {up1:6.1f} uploads/s, {rd1:6.1f} rollup reads/s")
            print(f"  2 web processes: {up2:6.1f} uploads/s, {rd2:6.1f} rollup reads/s "
                  f"(x{up2 / up1:.2f}, x{rd2 / rd1:.2f})")  # fmt: skip
            print(f"  after web: {_uptime()}")
    if "storage" not in args.skip:
        loaded, sizes, count_ns = storage(args)
        total = sum(size for size, _ in sizes.values())
        print(f"storage: {loaded:,} results ({args.days} days x {args.jobs} jobs x 3 pipelines "
              f"x {args.tests} tests)")  # fmt: skip
        for group, tables in TABLE_GROUPS.items():
            for table in tables:
                size, rows = sizes[table]
                print(
                    f"  {group[:14]:14s} {table:20s} {size / 2**20:8.1f} MiB {rows:>10,} rows "
                    f"{size / max(rows, 1):6.1f} B/row "
                    f"{size / loaded * 1e6 / 2**20:7.1f} MiB per million results"
                )
        print(f"  {'total':35s} {total / 2**20:8.1f} MiB, "
              f"{total / loaded * 1e6 / 2**20:7.1f} MiB per million results")  # fmt: skip
        print(f"  counting a project's rows: {count_ns:.0f} ns per row")
    print(f"end: {_uptime()}")


if __name__ == "__main__":
    main()
