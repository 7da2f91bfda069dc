"""Helpers shared by benchmarks: a throwaway embedded database and timing."""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path


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


def best_of(rounds: int, fn: Callable[[], object]) -> tuple[float, list[float]]:
    """Median and all timings (seconds) of `rounds` calls of fn."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def store_small_run(dsn: str, project_id: int, tests: int = 50) -> None:
    """Store one run of `tests` of the project's known tests through the real store, dated
    now, as a job of a random earlier run (its labels too): what an upload does to the data
    (a new data version, a new latest run of that job) without the HTTP round."""
    from datetime import UTC, datetime

    import psycopg

    from ingest.merge import merge_reports
    from ingest.model import ParsedReport, results_frame
    from ingest.store import RunMetadata, store_run

    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT nodeid, file, function FROM test_case WHERE project_id = %s LIMIT %s",
            (project_id, tests),
        ).fetchall()
        job, labels = conn.execute(
            "SELECT job, labels FROM run WHERE project_id = %s ORDER BY random() LIMIT 1",
            (project_id,),
        ).fetchone()  # type: ignore[misc]
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
            "RETURNING id",
            (project_id, f"bench-{time.time_ns()}".encode()),
        ).fetchone()[0]  # type: ignore[index]
        report = ParsedReport(
            format="junit",
            results=results_frame(
                {
                    "nodeid": [r[0] for r in rows],
                    "file": [r[1] for r in rows],
                    "function": [r[2] for r in rows],
                    "outcome": ["passed"] * len(rows),
                    "duration_s": [0.5] * len(rows),
                }
            ),
        )
        store_run(
            conn,
            project_id=project_id,
            upload_id=upload_id,
            meta=RunMetadata(job=job, labels=labels or {}, started_at=datetime.now(UTC)),
            merged=merge_reports([report]),
        )
        conn.commit()
