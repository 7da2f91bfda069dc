"""Helpers shared by benchmarks: a throwaway embedded database and timing."""

from __future__ import annotations

import contextlib
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def scratch_database(keep_home: Path | None = None) -> Iterator[tuple[str, str]]:
    """(SQLAlchemy URL, libpq DSN) of a migrated embedded server.

    Throwaway by default; with `keep_home` the server's data lives (and stays) there, so a
    large history is loaded once and timed again after a change.
    """
    from app.db.embedded import database_url, libpq_url
    from app.db.engine import migrate
    from app.settings import Settings

    with contextlib.ExitStack() as stack:
        home = keep_home or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="laptime-bench-"))
        )
        settings = Settings(home=home, database_url=None)
        with database_url(settings) as url:
            migrate(url)
            yield url, libpq_url(url)


def bench_project(engine: Any, dsn: str, size: Any, keep_home: Path | None) -> tuple[Any, bool]:
    """The "bench" project of the database and whether it was kept from an earlier run; a new
    one gets the demo history of `size` (app.demo_load.DemoSize) loaded."""
    from app.db.projects import create_project, get_project
    from app.demo_load import load_demo

    with engine.begin() as conn:
        kept = get_project(conn, "bench")
        project = kept or create_project(conn, "bench", public=True)
    if kept is None:
        start = time.perf_counter()
        stored = load_demo(dsn, project.id, size)
        print(f"stored {stored:,} results ({size}) in {time.perf_counter() - start:.1f} s")
    else:
        print(f"reusing the history kept in {keep_home}")
    return project, kept is not None


def best_of(rounds: int, fn: Callable[[], object]) -> tuple[float, list[float]]:
    """Median and all timings (seconds) of `rounds` calls of fn."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def augmix_nodeid(engine: Any, project_id: int) -> str:
    """The first (by name) parametrized test_augmix of a synthetic history: the test page's
    subject in the page benches."""
    from sqlalchemy import text

    with engine.connect() as conn:
        nodeid: str = conn.execute(
            text(
                "SELECT nodeid FROM test_case WHERE project_id = :p AND function = "
                "'test_augmix' ORDER BY nodeid LIMIT 1"
            ),
            {"p": project_id},
        ).scalar_one()
    return nodeid


def done_upload(conn: Any, project_id: int, tag: str) -> int:
    """A `done` upload row for a run a bench stores straight through the store (no files);
    `tag` makes its content hash unique."""
    row = conn.execute(
        "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
        "RETURNING id",
        (project_id, tag.encode()),
    ).fetchone()
    return int(row[0])


def store_upload(
    dsn: str,
    project_id: int,
    *,
    compact: bool = False,
    backlog: bool = False,
    pick: random.Random | None = None,
) -> None:
    """Store again, dated now, the latest run of a random job (its tests, outcomes, durations
    and labels) through the real store: what an upload does to the data (a new data version,
    a new latest run of that job) without the HTTP round, and without thinning the history the
    recommendations read. The run is left not compacted (what a read sees while the worker
    still ingests), or with `compact` added to the per-test rollups as an idle worker does
    right after it. The runs stored before are compacted first (as the worker leaves them
    after each drain) unless `backlog` keeps them (a worker busy with its queue). `pick`
    chooses the job (default: the module's generator)."""
    from datetime import UTC, datetime

    import psycopg

    from ingest.merge import merge_reports
    from ingest.model import ParsedReport, results_frame
    from ingest.store import RunMetadata, store_run

    try:
        from ingest import rollup_compaction
    except ImportError:
        # Code from before the compaction (commit 9240d1a: the ingest kept every rollup), so
        # the pages bench runs against it too: nothing is ever left to compact there.
        rollup_compaction = None  # type: ignore[assignment]

    def compact_backlog(conn: Any, *, projects: list[int]) -> None:
        if rollup_compaction is not None:
            rollup_compaction.compact_backlog(conn, projects=projects)

    with psycopg.connect(dsn) as conn:
        if not backlog:
            compact_backlog(conn, projects=[project_id])
        latest = conn.execute(
            "SELECT DISTINCT ON (job) id, day, job, labels FROM run WHERE project_id = %s "
            "ORDER BY job, started_at DESC",
            (project_id,),
        ).fetchall()
        run_id, day, job, labels = (pick or random).choice(latest)
        rows = conn.execute(
            "SELECT t.nodeid, t.file, t.function, r.outcome, r.duration_s FROM test_result r "
            "JOIN test_case t ON t.id = r.test_id WHERE r.day = %s AND r.run_id = %s",
            (day, run_id),
        ).fetchall()
        upload_id = done_upload(conn, project_id, f"bench-{time.time_ns()}")
        columns = ("nodeid", "file", "function", "outcome", "duration_s")
        report = ParsedReport(
            format="junit",
            results=results_frame({c: [r[i] for r in rows] for i, c in enumerate(columns)}),
        )
        store_run(
            conn,
            project_id=project_id,
            upload_id=upload_id,
            meta=RunMetadata(job=job, labels=labels or {}, started_at=datetime.now(UTC)),
            merged=merge_reports([report]),
        )
        conn.commit()
        if compact:
            compact_backlog(conn, projects=[project_id])


def one_run(ids: list[str], weights: Any) -> tuple[Any, Any]:
    """(results, runs) frames of one job's run of the tests `ids` taking `weights` seconds,
    its wall 300 s of setup more than its tests (what the split planner reads)."""
    import numpy as np
    import pandas as pd

    from ingest.model import results_frame
    from model.frames import RUN_COLUMNS, RUN_MEASURE_DEFAULTS

    results = results_frame(
        {
            "nodeid": ids,
            "file": [i.split("::")[0] for i in ids],
            "function": [i.split("::")[-1] for i in ids],
            "outcome": ["passed"] * len(ids),
            "duration_s": weights,
        }
    )
    results["run_id"] = 1
    runs = pd.DataFrame(
        [[1, "p", "test", None, None, "linux", pd.NaT, 300.0 + float(np.sum(weights)), np.nan,
          1, {}, False, 0, *RUN_MEASURE_DEFAULTS.values()]],
        columns=list(RUN_COLUMNS),
    )  # fmt: skip
    return results, runs


LAPTIME = [sys.executable, "-c", "from app.cli.main import main; main()"]


def laptime_env(url: str) -> dict[str, str]:
    """The environment of a `laptime` process on `url`: none of this shell's laptime or
    metrics settings, workers polling every 0.5 s."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAPTIME_", "PROMETHEUS_"))}
    env.update({"DATABASE_URL": url, "LAPTIME_WORKER_POLL_S": "0.5"})
    return env


def poll(predicate: Callable[[], object], timeout_s: float, what: str) -> None:
    """Wait until `predicate()` holds, failing after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out: {what}")
        time.sleep(0.05)


def count(dsn: str, sql: str, *args: object) -> int:
    """One integer from the database (0 for no row or NULL)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        row = conn.execute(sql, args).fetchone()  # type: ignore[arg-type]
    return int(row[0]) if row and row[0] is not None else 0


def start_workers(
    url: str, workers: int, env: dict[str, str] | None = None
) -> list[subprocess.Popen[str]]:
    """`workers` real `laptime worker` processes (with settings `env`), returned once each
    waits for uploads."""
    procs = [
        subprocess.Popen(
            [*LAPTIME, "worker"],
            env={**laptime_env(url), **(env or {})},
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(workers)
    ]
    ready = [threading.Event() for _ in procs]

    def watch(proc: subprocess.Popen[str], event: threading.Event) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            # Every version of the worker prints this line once it listens for uploads.
            if "waiting for uploads" in line:
                event.set()

    for proc, event in zip(procs, ready, strict=True):
        threading.Thread(target=watch, args=(proc, event), daemon=True).start()
    poll(lambda: all(e.is_set() for e in ready), 120, "workers up")
    return procs


def start_serve(url: str, *args: str) -> tuple[subprocess.Popen[bytes], str]:
    """A real `laptime serve` (with extra `args`) on `url`, once it answers: (process, base
    URL). The caller stops it."""
    from tests.server.conftest import start_serve as start

    proc, port = start(url, *args, workers_beating=None, poll_s=0.5)
    return proc, f"http://127.0.0.1:{port}"


def _stat_fields(pid: int) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def cpu_s(pid: int) -> float:
    """User + system CPU seconds a process has used (Linux /proc); 0 once it is gone."""
    fields = _stat_fields(pid)
    if fields is None:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and all its descendants, the exited ones included (their
    time is in their parent's cutime/cstime once reaped). The difference of two readings is
    what the tree used in between, whichever children came and went."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                children.setdefault(int(fields[1]), []).append(int(entry))
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    todo = [pid]
    while todo:
        current = todo.pop()
        fields = _stat_fields(current)
        if fields is None:
            continue
        total += sum(int(field) for field in fields[11:15]) / tick
        todo.extend(children.get(current, []))
    return total


def postmaster_pid(dsn: str) -> int:
    """The pid of the PostgreSQL server behind `dsn` (the parent of every backend)."""
    import psycopg

    with psycopg.connect(dsn) as conn:
        backend = conn.execute("SELECT pg_backend_pid()").fetchone()
        assert backend is not None
        # Read while the connection is open: its backend exits with it.
        fields = _stat_fields(int(backend[0]))
    assert fields is not None, "the database runs on another machine"
    return int(fields[1])
