"""Which results were flaky, from the data alone.

A result is a flaky observation when it passed after a failed attempt in its job (`flaky`), or
when it failed (failed/error) while another run of the same commit and cell (job + matrix
labels) passed it: a job retry, a re-run pipeline or a matrix twin that saw a different
outcome. Skipped results say nothing. A test with at least one flaky observation is flaky.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd

from model.frames import cell_key

FAILING = ("failed", "error")
# The result columns (plus run_id) and run columns the flaky analysis reads.
RESULT_NEEDS = ("run_id", "nodeid", "file", "outcome", "duration_s", "attempts", "flaky")
RUN_NEEDS = ("run_id", "pipeline", "job", "branch", "commit", "machine", "started_at", "wall_s")


@dataclass(frozen=True)
class TimelineDay:
    """One day of a flaky test: how many of its results there were and how many flaked."""

    day: str  # ISO date (UTC)
    runs: int
    flaky: int


@dataclass(frozen=True)
class FlakyTest:
    """A test that flaked at least once since its statistics started."""

    nodeid: str
    file: str | None
    runs: int  # results that passed or failed (skips say nothing)
    flaky_runs: int  # of those, flaky observations
    rate: float  # flaky_runs / runs
    reruns: int  # passed on a retry inside the job
    flaky_failures: int  # failed where the same commit and cell passed
    first_seen: datetime
    last_seen: datetime
    branches: tuple[str, ...]
    cells: tuple[str, ...]  # "job|labels_key"
    timeline: tuple[TimelineDay, ...]


def cell_of(job: object, labels_key: object) -> str:
    """A cell's display key: "job|labels_key"."""
    return (
        f"{job if isinstance(job, str) else ''}|{labels_key if isinstance(labels_key, str) else ''}"
    )


def joined_results(
    results: pd.DataFrame,
    runs: pd.DataFrame,
    *,
    since: datetime | None = None,
    resets: Mapping[str, datetime] | None = None,
) -> pd.DataFrame:
    """Results joined to their run (job, cell, commit, pipeline, branch, start), without those
    before `since` and, per test, before its reset date (a fix landed)."""
    run_cols = runs[[c for c in RUN_NEEDS if c in runs.columns]].copy()
    labels = runs["labels"] if "labels" in runs.columns else pd.Series([{}] * len(runs))
    run_cols["cell_labels"] = [cell_key(v) for v in labels]
    run_cols["started_at"] = pd.to_datetime(run_cols["started_at"], utc=True)
    job_wall = runs["job_wall_s"] if "job_wall_s" in runs.columns else pd.Series(np.nan, runs.index)
    # The job's whole wall, setup included: the CI clock when known, else the report's.
    run_cols["job_wall"] = (
        pd.to_numeric(job_wall, errors="coerce")
        .astype(float)
        .fillna(pd.to_numeric(run_cols["wall_s"], errors="coerce").astype(float))
    )
    workers = runs["xdist_workers"] if "xdist_workers" in runs.columns else 1
    run_cols["workers"] = pd.to_numeric(pd.Series(workers, index=runs.index), errors="coerce")
    run_cols["workers"] = run_cols["workers"].fillna(1).clip(lower=1)
    frame = results[[c for c in (*RESULT_NEEDS, "last_attempt_s") if c in results.columns]]
    frame = frame.merge(run_cols, on="run_id", how="inner")
    frame["nodeid"] = frame["nodeid"].astype(str)
    frame["outcome"] = frame["outcome"].astype(str)
    frame["file"] = frame["file"].astype(object).where(frame["file"].notna(), None)
    frame["flaky"] = frame["flaky"].fillna(False).astype(bool)
    keep = pd.Series(True, index=frame.index)
    if since is not None:
        keep &= frame["started_at"] >= pd.Timestamp(since)
    if resets:
        cutoff = frame["nodeid"].map({k: pd.Timestamp(v) for k, v in resets.items()})
        keep &= ~(cutoff.notna() & (frame["started_at"] < cutoff))
    return frame[keep.to_numpy()].reset_index(drop=True)


def flaky_observations(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` (joined_results) with `rerun`, `flaky_failure` and `flaky_obs` columns."""
    frame = frame.copy()
    failing = frame["outcome"].isin(FAILING)
    passing = frame["outcome"] == "passed"
    frame["rerun"] = frame["flaky"] & passing
    keyed = frame["commit"].notna()
    group = [frame["nodeid"], frame["commit"], frame["job"].astype(object), frame["cell_labels"]]
    passed_here = passing.groupby(group, dropna=False).transform("any")
    frame["flaky_failure"] = failing & keyed & passed_here.astype(bool)
    frame["flaky_obs"] = frame["rerun"] | frame["flaky_failure"]
    return frame


def _test_summary(nodeid: str, rows: pd.DataFrame) -> FlakyTest:
    decided = rows[rows["outcome"] != "skipped"]
    seen = decided[decided["flaky_obs"]]
    days = decided["started_at"].dt.strftime("%Y-%m-%d")
    per_day = decided.groupby(days)["flaky_obs"].agg(["size", "sum"])
    files = rows["file"].dropna()
    return FlakyTest(
        nodeid=nodeid,
        file=str(files.iloc[0]) if len(files) else None,
        runs=len(decided),
        flaky_runs=len(seen),
        rate=len(seen) / len(decided),
        reruns=int(seen["rerun"].sum()),
        flaky_failures=int(seen["flaky_failure"].sum()),
        first_seen=seen["started_at"].min().to_pydatetime(),
        last_seen=seen["started_at"].max().to_pydatetime(),
        branches=tuple(sorted({str(b) for b in seen["branch"].dropna()})),
        cells=tuple(
            sorted({cell_of(j, k) for j, k in zip(seen["job"], seen["cell_labels"], strict=True)})
        ),
        timeline=tuple(
            TimelineDay(str(day), int(row["size"]), int(row["sum"]))
            for day, row in per_day.iterrows()
        ),
    )


def flaky_tests(observed: pd.DataFrame) -> dict[str, FlakyTest]:
    """Every test with a flaky observation in `observed` (flaky_observations), by nodeid."""
    flaky_ids = set(observed.loc[observed["flaky_obs"], "nodeid"])
    mine = observed[observed["nodeid"].isin(flaky_ids)]
    return {str(n): _test_summary(str(n), rows) for n, rows in mine.groupby("nodeid", sort=True)}
