"""A stored change's series around its step: the points its figure draws.

Each point is the one detection pushed at ingest (`run_points` over the run's stored results and
measures), so the medians of the points on either side of the step are the change's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd

from analysis.changes.run_points import run_points

# The run measures a point is made of (run_points' `run`), as columns of the runs frame.
RUN_MEASURES = ("wall_s", "job_wall_s", "cpu_s", "xdist_workers")


@dataclass(frozen=True)
class SeriesRun:
    """One run's point in a change's series."""

    run_id: int
    commit: str | None
    started_at: datetime
    duration_s: float
    after: bool  # the first run after the step, or a later one


def step_points(
    kind: str, key: str, runs: pd.DataFrame, results: pd.DataFrame, run_id_after: int
) -> tuple[SeriesRun, ...]:
    """The point of series (kind, key) in each of `runs` (run_id, commit, started_at and the
    RUN_MEASURES, oldest first), from `results` (run_points' columns plus run_id); a run
    without one (a test that did not pass in it) is left out."""
    ids = results["run_id"].to_numpy(dtype=np.int64)
    by_run = {int(r): results.loc[ids == r] for r in np.unique(ids)}
    empty = results.iloc[0:0]
    measures = {
        m: pd.to_numeric(runs[m], errors="coerce").astype(float).to_numpy() for m in RUN_MEASURES
    }
    values = []
    for i, run_id in enumerate(runs["run_id"].to_numpy(dtype=np.int64)):
        run = {m: None if np.isnan(v[i]) else float(v[i]) for m, v in measures.items()}
        found = run_points(by_run.get(int(run_id), empty), run=run)
        hit = found.loc[(found["kind"] == kind) & (found["key"] == key), "duration_s"]
        values.append(float(hit.iloc[0]) if len(hit) else np.nan)
    frame = runs.assign(duration_s=values, after=runs["run_id"] >= run_id_after)
    return series_runs(frame)


def nearest_runs(run_ids: np.ndarray, tests: np.ndarray, run_id_after: int, cap: int) -> np.ndarray:
    """Which runs (a mask, in the given order) to read every result of within `cap` results:
    the runs nearest the step first, alternating sides, until the next would pass the cap
    (the first run after and the last before are kept whatever their size)."""
    ids = np.asarray(run_ids, dtype=np.int64)
    sizes = np.nan_to_num(np.asarray(tests, dtype=np.float64), nan=0.0)
    after = ids >= run_id_after
    # Distance from the step in runs: the first after and the last before are both 0.
    rank = np.empty(len(ids), dtype=np.int64)
    rank[after] = np.arange(int(after.sum()))
    rank[~after] = np.arange(int((~after).sum()))[::-1]
    order = np.lexsort((~after, rank))  # by distance, the side after first
    kept = np.zeros(len(ids), dtype=bool)
    total = 0.0
    for i in order:
        if total + sizes[i] > cap and rank[i] > 0:
            break
        kept[i] = True
        total += sizes[i]
    return kept


def series_runs(frame: pd.DataFrame) -> tuple[SeriesRun, ...]:
    """Rows of run_id, commit, started_at, duration_s and after as points, in row order;
    rows without a finite duration left out."""
    kept = frame.loc[np.isfinite(pd.to_numeric(frame["duration_s"], errors="coerce"))]
    return tuple(
        SeriesRun(
            run_id=int(row.run_id),
            commit=None if pd.isna(row.commit) else str(row.commit),
            started_at=pd.Timestamp(row.started_at).to_pydatetime(),
            duration_s=float(row.duration_s),
            after=bool(row.after),
        )
        for row in kept.itertuples(index=False)
    )
