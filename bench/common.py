"""Helpers shared by benchmarks: a throwaway embedded database and timing."""

from __future__ import annotations

import contextlib
import random
import statistics
import tempfile
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


def best_of(rounds: int, fn: Callable[[], object]) -> tuple[float, list[float]]:
    """Median and all timings (seconds) of `rounds` calls of fn."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times


def store_upload(dsn: str, project_id: int) -> None:
    """Store again, dated now, the latest run of a random job (its tests, outcomes, durations
    and labels) through the real store: what an upload does to the data (a new data version,
    a new latest run of that job) without the HTTP round, and without thinning the history
    the recommendations read."""
    from datetime import UTC, datetime

    import psycopg

    from ingest.merge import merge_reports
    from ingest.model import ParsedReport, results_frame
    from ingest.store import RunMetadata, store_run

    with psycopg.connect(dsn) as conn:
        latest = conn.execute(
            "SELECT DISTINCT ON (job) id, day, job, labels FROM run WHERE project_id = %s "
            "ORDER BY job, started_at DESC",
            (project_id,),
        ).fetchall()
        run_id, day, job, labels = random.choice(latest)
        rows = conn.execute(
            "SELECT t.nodeid, t.file, t.function, r.outcome, r.duration_s FROM test_result r "
            "JOIN test_case t ON t.id = r.test_id WHERE r.day = %s AND r.run_id = %s",
            (day, run_id),
        ).fetchall()
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
            "RETURNING id",
            (project_id, f"bench-{time.time_ns()}".encode()),
        ).fetchone()[0]  # type: ignore[index]
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


def one_run(ids: list[str], weights: Any) -> tuple[Any, Any]:
    """(results, runs) frames of one job's run of the tests `ids` taking `weights` seconds,
    its wall 300 s of setup more than its tests (what the split planner reads)."""
    import numpy as np
    import pandas as pd

    from analysis.frames import RUN_COLUMNS, RUN_MEASURE_DEFAULTS
    from ingest.model import results_frame

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
