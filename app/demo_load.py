"""Store a synthetic history through the real ingest path (store_run), one run at a time."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pandas as pd
import psycopg

from demo.synthetic import SyntheticHistory, iter_history_chunks
from ingest.merge import MergedRun
from ingest.model import SessionInfo
from ingest.rollup_compaction import compact_backlog
from ingest.store import KnownTests, RunMetadata, store_run


@dataclass(frozen=True)
class DemoSize:
    """How much history to make."""

    days: int = 14
    tests: int = 2000
    jobs: int = 4
    pipelines_per_day: int = 3
    seed: int = 0

    @property
    def results(self) -> int:
        """How many results the history holds."""
        return self.days * self.tests * self.jobs * self.pipelines_per_day


def demo_chunks(size: DemoSize, *, until: date | None = None) -> Iterator[SyntheticHistory]:
    """The history one day at a time, ending on `until` (default today)."""
    last = until or datetime.now(UTC).date()
    return iter_history_chunks(
        days=size.days,
        tests=size.tests,
        jobs=size.jobs,
        seed=size.seed,
        start=last - timedelta(days=size.days - 1),
        pipelines_per_day=size.pipelines_per_day,
    )


def _plain(frame: pd.DataFrame) -> pd.DataFrame:
    # The generator uses categoricals to stay small; the store wants plain columns.
    out = frame.copy()
    for column in out.columns:
        if isinstance(out[column].dtype, pd.CategoricalDtype):
            out[column] = out[column].astype(object).where(out[column].notna(), None)
    return out


def load_demo(
    dsn: str,
    project_id: int,
    size: DemoSize,
    *,
    until: date | None = None,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Store every run of the synthetic history; returns the number of results stored."""
    stored = 0
    with psycopg.connect(dsn) as conn:
        known = KnownTests()  # any failure ends the load, so nothing remembered rolls back
        for chunk in demo_chunks(size, until=until):
            results = _plain(chunk.results)
            by_run = results.groupby("run_id", sort=True)
            for run in chunk.runs.itertuples(index=False):
                frame = by_run.get_group(run.run_id).drop(columns=["run_id"])
                stored += _store_one(conn, project_id, run, frame.reset_index(drop=True), known)
                conn.commit()
                if progress is not None:
                    progress(len(frame))
            # As the worker does after a drain: the chunk's runs into the per-test rollups.
            compact_backlog(conn, projects=[project_id])
    return stored


def _store_one(
    conn: psycopg.Connection[Any],
    project_id: int,
    run: Any,
    frame: pd.DataFrame,
    known: KnownTests,
) -> int:
    metadata = {
        "job": run.job,
        "pipeline": run.pipeline,
        "commit": run.commit,
        "branch": run.branch,
        "machine": run.machine,
        "labels": dict(run.labels),
        "started_at": run.started_at.isoformat(),
        "wall_s": float(run.wall_s),
        "peak_rss_mib": float(run.peak_rss_mib),
        "source": "demo-data",
    }
    digest = hashlib.sha256(json.dumps(metadata, sort_keys=True).encode()).digest()
    row = conn.execute(
        "INSERT INTO upload (project_id, status, metadata, job, content_hash, finished_at) "
        "VALUES (%s, 'done', %s, %s, %s, now()) RETURNING id",
        (project_id, json.dumps(metadata), run.job, digest),
    ).fetchone()
    assert row is not None
    merged = MergedRun(results=frame, session=SessionInfo(xdist_workers=int(run.xdist_workers)))
    result = store_run(
        conn,
        project_id=project_id,
        upload_id=int(row[0]),
        meta=RunMetadata(
            job=run.job,
            pipeline=run.pipeline,
            commit=run.commit,
            branch=run.branch,
            machine=run.machine,
            labels=dict(run.labels),
            started_at=run.started_at.to_pydatetime(),
            wall_s=float(run.wall_s),
            peak_rss_mib=float(run.peak_rss_mib),
        ),
        merged=merged,
        known_tests=known,
    )
    conn.execute(
        "UPDATE upload SET run_id = %s, counts = %s WHERE id = %s",
        (result.run_id, json.dumps({"results": result.results}), row[0]),
    )
    return result.results
