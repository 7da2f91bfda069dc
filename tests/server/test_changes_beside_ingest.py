"""Change detection beside ingest: the ingest's transaction commits the run with a mark, and the
worker detects it afterwards in a transaction of its own. A worker killed between the two loses
no detection (the next pass, or the cell's next upload, takes the mark), and whichever way each
run went (at once, after a kill, batched, by a worker holding nothing in memory), the stored
changes equal a from-scratch detection over the same stored history, for every series kind."""

from __future__ import annotations

import math
import os
import signal
from dataclasses import dataclass

import numpy as np
import pandas as pd
import psycopg

from analysis.changes import detect_changes
from analysis.changes.run_points import SERIES_KINDS, run_points
from app.db.engine import make_engine
from app.db.projects import get_project
from app.db.uploads import IncomingFile, UploadMetadata, insert_upload
from ingest.change_detection import RunToDetect, retry_backlog, stored_results
from ingest.change_states import forget_all
from ingest.worker import WorkerConfig, drain, process_next
from tests.conftest import make_project
from tests.server.conftest import sqlalchemy_to_dsn, start_worker, wait_for

JOBS = ("unit", "slow")
ROUNDS = 60  # runs per cell
LOCK_CLASS = 727029  # ingest/change_detection.py's advisory lock class of a cell


@dataclass(frozen=True)
class Case:
    """One test of the history: its level, noise, step (run and factor) and first run."""

    classname: str
    name: str
    level_s: float
    sigma: float
    step_at: int
    factor: float
    first: int
    coarse: bool


def _cases(seed: int) -> list[Case]:
    """Tests over four files: some step up or down at a random run, some appear late, some
    are parametrized, one file's timer is coarse (ties)."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(28):
        f = i % 4
        name = f"test_p[{i}]" if i % 3 == 0 else f"test_{i}"
        stepped = rng.random() < 0.4
        cases.append(
            Case(
                classname=f"tests.test_f{f}",
                name=name,
                level_s=float(rng.uniform(0.05, 3.0)),
                sigma=float(rng.uniform(0.01, 0.12)),
                step_at=int(rng.integers(12, ROUNDS - 8)) if stepped else ROUNDS,
                factor=float(rng.choice([0.6, 1.3, 1.6, 2.5])) if stepped else 1.0,
                first=int(rng.integers(5, 25)) if rng.random() < 0.15 else 0,
                coarse=f == 3,
            )
        )
    return cases


CASES = _cases(7)


def _report(round_: int, job: str) -> bytes:
    rng = np.random.default_rng([round_, JOBS.index(job)])
    body = []
    for case in CASES:
        if round_ < case.first:
            continue
        level = case.level_s * (case.factor if round_ >= case.step_at else 1.0)
        level *= 1.4 if job == "slow" else 1.0
        time_s = level * math.exp(rng.normal(0.0, case.sigma))
        if case.coarse:
            time_s = round(time_s, 2)
        failed = rng.random() < 0.03
        inner = '<failure message="boom"/>' if failed else ""
        body.append(
            f'<testcase classname="{case.classname}" name="{case.name}" '
            f'time="{time_s:.6f}">{inner}</testcase>'
        )
    return (
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        + "".join(body)
        + "</testsuite></testsuites>"
    ).encode()


def _queue(url: str, slug: str | None, rounds: range) -> str:
    """Queue each round's upload of every job, in order; the project's slug."""
    engine = make_engine(url, pool_size=1)
    try:
        slug = slug or make_project(engine).slug
        for i in rounds:
            for job in JOBS:
                with engine.begin() as conn:
                    project = get_project(conn, slug)
                    assert project is not None
                    meta = {"job": job, "branch": "main", "commit": f"{i:040x}"}
                    insert_upload(
                        conn, project, [IncomingFile("r.xml", _report(i, job))],
                        UploadMetadata.of(meta),
                        idempotency_key=None, max_report_bytes=10**9,
                    )  # fmt: skip
    finally:
        engine.dispose()
    return slug


def _process(url: str, uploads: int, *, cold_every: int = 0) -> None:
    """Ingest `uploads` queued uploads one by one with the worker's own process_next."""
    dsn = sqlalchemy_to_dsn(url)
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        for n in range(uploads):
            if cold_every and n % cold_every == 0:
                forget_all()  # a worker that holds no cell in memory
            assert process_next(conn, side, WorkerConfig(name="beside")) is not None


def _marks(url: str) -> list[tuple[int, int, str | None]]:
    with psycopg.connect(sqlalchemy_to_dsn(url)) as conn:
        rows = conn.execute(
            "SELECT run_id, cell_id, error FROM change_backlog ORDER BY run_id"
        ).fetchall()
    return [(int(r), int(c), e) for r, c, e in rows]


def _kill_between_commit_and_detection(url: str) -> list[int]:
    """Run a real worker on the queued uploads while this test holds the `unit` cell's
    detection lock; once its ingest committed and it waits to detect, SIGKILL it. Returns
    the runs it left marked."""
    dsn = sqlalchemy_to_dsn(url)
    with psycopg.connect(dsn, autocommit=True) as holder:
        (cell_id,) = holder.execute("SELECT id FROM cell WHERE job = 'unit'").fetchone()  # type: ignore[misc]
        holder.execute("SELECT pg_advisory_lock(%s, hashint8(%s))", (LOCK_CLASS, cell_id))
        worker = start_worker(url)
        try:

            def committed_and_waiting() -> bool:
                queued = holder.execute(
                    "SELECT count(*) FROM upload WHERE status <> 'done'"
                ).fetchone()
                waiting = holder.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone()
                return queued == (0,) and waiting == (1,)

            wait_for(committed_and_waiting, 120, "the worker's ingest committed, detection waiting")
            os.kill(worker.pid, signal.SIGKILL)
            assert worker.wait(timeout=30) == -signal.SIGKILL
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        holder.execute("SELECT pg_advisory_unlock(%s, hashint8(%s))", (LOCK_CLASS, cell_id))
        latest = holder.execute("SELECT max(id) FROM run WHERE cell_id = %s", (cell_id,)).fetchone()
    marked = _marks(url)
    # The killed worker's run is stored and marked, not detected (the mark goes with the push).
    assert latest is not None
    assert (int(latest[0]), cell_id, None) in marked
    return [run for run, _, _ in marked]


def _stored_changes(url: str) -> list[tuple]:
    with psycopg.connect(sqlalchemy_to_dsn(url)) as conn:
        rows = conn.execute(
            "SELECT cell_id, kind, key, position, run_id_before, run_id_after, "
            "confirmed_run_id, runs_before, runs_after, median_before_s, median_after_s, "
            "spread_before_s, spread_after_s, noise, z FROM duration_change"
        ).fetchall()
    return sorted(tuple(r) for r in rows)


def _from_scratch(url: str) -> list[tuple]:
    """Every series of the stored history, built from each run's stored results with the
    points ingest makes, in run order, detected whole (`detect_changes`)."""
    series: dict[tuple[int, str, str], list[tuple[int, float]]] = {}
    with psycopg.connect(sqlalchemy_to_dsn(url)) as conn:
        runs = conn.execute(
            "SELECT id, project_id, cell_id, branch, day, wall_s, job_wall_s, cpu_s, "
            "xdist_workers FROM run ORDER BY id"
        ).fetchall()
        for run_id, project_id, cell_id, branch, day, wall, job_wall, cpu, workers in runs:
            results = stored_results(conn, RunToDetect(project_id, cell_id, run_id, branch), day)
            measures = {"wall_s": wall, "job_wall_s": job_wall, "cpu_s": cpu,
                        "xdist_workers": float(workers)}  # fmt: skip
            points = run_points(results, run=measures)
            for kind, key, duration in points.itertuples(index=False):
                series.setdefault((cell_id, kind, key), []).append((run_id, duration))
    found = []
    for (cell_id, kind, key), values in series.items():
        run_ids = np.array([r for r, _ in values])
        frame = pd.DataFrame(
            {
                "run_id": run_ids,
                "commit": "",
                "started_at": pd.Timestamp("2026-01-01", tz="UTC"),
                "duration_s": [d for _, d in values],
            }
        )
        for c in detect_changes(frame):
            found.append(
                (cell_id, kind, key, c.index, c.run_id_before, c.run_id_after,
                 int(run_ids[c.confirmed_index]), c.runs_before, c.runs_after,
                 c.median_before_s, c.median_after_s, c.spread_before_s, c.spread_after_s,
                 c.noise, c.z)
            )  # fmt: skip
    return sorted(found)


def _same(got: list[tuple], want: list[tuple]) -> None:
    """Equal changes: the same series, positions and runs; the same numbers (a file's sum
    may add its tests in another order when read back, so to 1e-9)."""
    assert [g[:9] for g in got] == [w[:9] for w in want]
    for g, w in zip(got, want, strict=True):
        assert np.allclose(g[9:], w[9:], rtol=1e-9, atol=0), (g, w)


def test_a_killed_worker_loses_no_detection_and_ingest_equals_from_scratch(
    private_db: str,
) -> None:
    slug = _queue(private_db, None, range(20))
    _process(private_db, 40, cold_every=7)
    assert _marks(private_db) == []  # each run was detected right after its commit

    # Killed between the ingest's commit and detection: the next pass detects the run.
    _queue(private_db, slug, range(20, 21))
    left = _kill_between_commit_and_detection(private_db)
    forget_all()  # the next pass is another worker
    with psycopg.connect(sqlalchemy_to_dsn(private_db)) as conn:
        assert retry_backlog(conn) == len(left)
    assert _marks(private_db) == []

    # Killed again: this time the cell's next upload takes the older mark first.
    _queue(private_db, slug, range(21, 22))
    left = _kill_between_commit_and_detection(private_db)
    _queue(private_db, slug, range(22, 23))
    _process(private_db, 2)
    assert _marks(private_db) == []

    # The rest in batches of up to four uploads per ingest transaction.
    _queue(private_db, slug, range(23, ROUNDS))
    dsn = sqlalchemy_to_dsn(private_db)
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        drain(conn, side, WorkerConfig(name="batched", batch_uploads=4))
    assert _marks(private_db) == []

    got = _stored_changes(private_db)
    want = _from_scratch(private_db)
    _same(got, want)
    kinds = {row[1] for row in got}
    assert {"test", "file"} <= kinds <= set(SERIES_KINDS), kinds
    assert len({(row[0], row[2]) for row in got if row[1] == "test"}) >= 10
