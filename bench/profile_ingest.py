"""Where each millisecond of one upload's ingest goes: a per-phase table of the real worker.

    .venv/bin/python -m bench.profile_ingest [--uploads 60] [--tests 1000] [--batch N] [--known]

Queues `--uploads` distinct JUnit reports of `--tests` testcases through the API's own
insert_upload (raw files committed, NOTIFY sent), then drains them in this process with the
worker's own `drain` and a running Heartbeat thread: the code a `laptime worker` runs. The named
functions of ingest/worker.py and ingest/store.py, every statement they send (by its first
words), the COMMIT and the heartbeat's writes are timed with perf_counter wrappers installed
only here; each row is self time (what its children took is in their own rows), so the rows add
up to the wall time of the drain. Physical limits of this machine, measured in the same run:
the commit of a one-row insert (WAL flush, fsync). CPU time per upload (this process and its
database backends, from /proc) is the figure to compare on shared cores: wall time is not.

Before (the figures README.md quotes; tests/test_before_figures.py checks them):
- `66 ms`: CPU per 1,000-test upload, the worker process and its backends, the code at commit
  35487e62a792 (the parent of the array-parameter store), run back to back with
  the new code, `python -m bench.profile_ingest --uploads 60`.
- `33.0 / 29.4 ms`: CPU per upload of a known 1,000-test suite, the worker process and its
  backend, one / up to 8 uploads per transaction, the code at commit d74ae0c447b3 (the parent of
  the cuts to the worker's per-upload Python and the 131,072-result compaction passes) with
  this script, run back to back with the new code,
  `python -m bench.profile_ingest --uploads 240 --tests 1000 --known --batch 1` (and `--batch 8`).
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import statistics
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from bench.common import cpu_s, scratch_database

_local = threading.local()


class PhaseClock:
    """Self time per phase label, for the thread that ran it (a stack of open phases)."""

    def __init__(self) -> None:
        self.self_s: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._lock = threading.Lock()

    @contextmanager
    def phase(self, label: str) -> Iterator[None]:
        stack: list[list[Any]] = _local.__dict__.setdefault("stack", [])
        if stack:
            label = f"{stack[-1][0]} > {label}" if _nested(label) else label
        frame = [label, time.perf_counter(), 0.0]  # label, start, children's time
        stack.append(frame)
        try:
            yield
        finally:
            stack.pop()
            elapsed = time.perf_counter() - frame[1]
            with self._lock:
                self.self_s[label] += elapsed - frame[2]
                self.calls[label] += 1
            if stack:
                stack[-1][2] += elapsed


def _nested(label: str) -> bool:
    # Statements are shown under the function that sent them; functions stand alone.
    return label.startswith(("SQL ", "COPY ", "COMMIT"))


def _statement_label(query: Any) -> str:
    text = query if isinstance(query, str) else getattr(query, "as_string", lambda _: "?")(None)
    words = re.sub(r"\s+", " ", str(text)).strip()
    head = re.match(
        r"(INSERT INTO \w+|UPDATE \w+|DELETE FROM \w+|SELECT pg_advisory_xact_lock|"
        r"SELECT to_regclass|CREATE TEMP TABLE IF NOT EXISTS \w+|CREATE TABLE IF NOT EXISTS|"
        r"TRUNCATE \w+|COPY \w+|SELECT 1 FROM \w+|SELECT id FROM \w+|SELECT \w+|\w+)",
        words,
    )
    word = head.group(0) if head else words[:30]
    return word if word.startswith("COPY") else f"SQL {word}"


def instrument(clock: PhaseClock) -> None:
    """Wrap the worker's and the store's named steps, psycopg's statements and COMMIT."""
    import ingest.batch as batch
    import ingest.heartbeat as heartbeat
    import ingest.store as store
    import ingest.store_batch as store_batch
    import ingest.worker as worker

    def timed(module: Any, name: str, label: str | None = None) -> None:
        original = getattr(module, name)

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with clock.phase(label or name):
                return original(*args, **kwargs)

        setattr(module, name, wrapper)

    for name in (
        "attempts_so_far",
        "record_attempt",
        "drop_unspent",
        "_parse_files",
        "merge_reports",
        "run_groups",
        "store_run",
        "detect_at_ingest",
        "report_outcome",
    ):
        if hasattr(worker, name):
            timed(worker, name)
    for name in (
        "storable_results",
        "storable_metadata",
        "_ensure_partition",
        "_cell_id",
        "_insert_run",
        "compute_test_ids",
        "_upsert_test_cases",
        "_copy_results",
        "_store_file_rollups",
        "prepare_run",
    ):
        if hasattr(store, name):
            timed(store, name)
    # The batch's steps (ingest/batch.py, ingest/store_batch.py), named apart from the single
    # path's, and the single path's steps as the batch module calls them.
    for name in ("_record_attempts", "_ingest_batch", "prepare_run", "store_runs", "_parse"):
        if hasattr(batch, name):
            timed(batch, name, f"batch.{name}")
    for name in ("parse_upload_files", "merge_upload", "detect_changes", "report_outcome"):
        if hasattr(batch, name):
            timed(batch, name)
    for name in (
        "_upsert_test_cases",
        "copy_result_frame",
        "_store_file_rollups",
        "dictionary_rows",
    ):
        if hasattr(store_batch, name):
            timed(store_batch, name, f"store_batch.{name}")
    # The per-test rollups, added after the ingest (ingest/rollup_compaction.py).
    timed(worker, "compact_backlog", "compact_backlog (per-test rollups)")
    import ingest.upload_ingest as upload_ingest

    timed(upload_ingest, "parse_report", "parse_report (XML to frame)")

    execute = psycopg.Connection.execute

    def timed_execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        with clock.phase(_statement_label(query)):
            return execute(self, query, *args, **kwargs)

    psycopg.Connection.execute = timed_execute  # type: ignore[method-assign]
    copy = psycopg.Cursor.copy

    @contextmanager
    def timed_copy(self: Any, statement: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        with clock.phase(_statement_label(statement)), copy(self, statement, *args, **kwargs) as c:
            yield c

    psycopg.Cursor.copy = timed_copy  # type: ignore[assignment,method-assign]
    leave = psycopg.Transaction.__exit__

    def timed_exit(self: Any, *args: Any) -> Any:
        with clock.phase("COMMIT (WAL flush)"):
            return leave(self, *args)

    psycopg.Transaction.__exit__ = timed_exit  # type: ignore[method-assign]
    run = heartbeat.Heartbeat._run
    heartbeat.Heartbeat._run = lambda self: _in_phase(clock, "heartbeat thread", run, self)  # type: ignore[method-assign]


def _in_phase(clock: PhaseClock, label: str, fn: Callable[..., Any], *args: Any) -> Any:
    with clock.phase(label):
        return fn(*args)


def queue_uploads(url: str, uploads: int, tests: int, *, known: bool = False) -> int:
    """Queue reports of 12 jobs through the API's insert_upload; returns the project id. Each
    holds tests of its own, or with `known` each job sends its same suite every time."""
    from app.db.engine import make_engine, transaction
    from app.db.projects import create_project
    from app.db.uploads import IncomingFile, UploadMetadata, insert_upload
    from tests.factories import junit_xml

    engine = make_engine(url)
    with transaction(engine) as conn:
        project = create_project(conn, f"profile-{time.time_ns()}")
    for i in range(uploads):
        prefix = f"tests/c{i % 12}/m" if known else f"tests/c{i % 12}/u{i}/m"
        body = junit_xml(tests, seed=i, prefix=prefix)
        with transaction(engine) as conn:
            insert_upload(
                conn,
                project,
                [IncomingFile("junit.xml", body)],
                UploadMetadata(job=f"job{i % 12}", pipeline=f"p{i}"),
                idempotency_key=None,
                max_report_bytes=1 << 30,
            )
    engine.dispose()
    return project.id


def commit_cost(dsn: str, rounds: int = 30) -> float:
    """Median seconds of one committed one-row insert: the WAL flush every ingest pays."""
    with psycopg.connect(dsn) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS fsync_probe (x int)")
        conn.commit()
        times = []
        for i in range(rounds):
            start = time.perf_counter()
            conn.execute("INSERT INTO fsync_probe VALUES (%s)", (i,))
            conn.commit()
            times.append(time.perf_counter() - start)
        conn.execute("DROP TABLE fsync_probe")
        conn.commit()
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--uploads", type=int, default=60)
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument(
        "--batch", type=int, default=1, help="uploads of one project per ingest transaction"
    )
    parser.add_argument(
        "--known", action="store_true", help="each job uploads the same suite every time, as CI"
    )
    args = parser.parse_args()
    from ingest.heartbeat import Heartbeat
    from ingest.store import KnownTests
    from ingest.worker import WorkerConfig, drain, ingest_connection, side_connection

    clock = PhaseClock()
    with scratch_database() as (url, dsn):
        queue_uploads(url, args.uploads, args.tests, known=args.known)
        fsync_s = commit_cost(dsn)
        instrument(clock)
        config = WorkerConfig(name="profile", batch_uploads=args.batch)
        heartbeat = Heartbeat(dsn, "profile", interval_s=5.0)
        heartbeat.start()
        try:
            with (
                ingest_connection(dsn, "profile") as conn,
                side_connection(dsn, "profile") as side,
            ):
                heartbeat.attach(conn)
                backends = [c.info.backend_pid for c in (conn, side)]
                cpu_before = [cpu_s(pid) for pid in (os.getpid(), *backends)]  # same order
                start = time.perf_counter()
                with clock.phase("drain loop (rest)"):
                    done = drain(conn, side, config, heartbeat=heartbeat, known_tests=KnownTests())
                wall = time.perf_counter() - start
                pids = (os.getpid(), *backends)
                cpu = [cpu_s(p) - b for p, b in zip(pids, cpu_before, strict=True)]
        finally:
            heartbeat.stop()
    assert done == args.uploads, done
    clock.self_s.pop("heartbeat thread", 0.0)  # mostly waiting between beats
    beat_sql = sum(v for k, v in clock.self_s.items() if k.startswith("heartbeat thread >"))
    beats = sum(n for k, n in clock.calls.items() if k.startswith("heartbeat thread > SQL INSERT"))
    rows = sorted(
        ((k, v) for k, v in clock.self_s.items() if not k.startswith("heartbeat thread")),
        key=lambda kv: -kv[1],
    )
    per = 1000 / done
    print(
        f"{done} uploads of {args.tests} testcases "
        f"({'the same suite per job' if args.known else 'new tests in each'}), "
        f"one worker in this process, up to {args.batch} per transaction"
    )
    print(f"{'phase (self time)':<66} {'ms/upload':>9} {'share':>6}")
    for label, seconds in rows:
        print(f"{label[:66]:<66} {seconds * per:9.2f} {seconds / wall:6.1%}")
    print(f"{'total (wall of the drain)':<66} {wall * per:9.2f}  ({done / wall:.1f} uploads/s)")
    print(
        f"heartbeat thread (own connection, beside the total): {beats} beats, "
        f"{beat_sql * per:.2f} ms/upload of statements"
    )
    # CPU time moves far less than wall time when other work shares the cores.
    print(
        f"CPU per upload: this process {cpu[0] * per:.2f} ms (the worker and the heartbeat "
        f"thread), its database backend {cpu[1] * per:.2f} ms, the attempts connection's "
        f"{cpu[2] * per:.2f} ms; together {sum(cpu) * per:.2f} ms "
        f"= {1000 / (sum(cpu) * per):.0f} uploads/s per core"
    )
    print(f"physical limit: a committed one-row insert (WAL flush) {fsync_s * 1000:.2f} ms")


if __name__ == "__main__":
    main()
