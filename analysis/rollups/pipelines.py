"""CI pipeline time: developer wait, machine time and job setup overhead, per run and per day.

Terms:
- job wall: a job's uploaded wall time (setup included). A job without one is estimated as
  its test time / xdist workers, and flagged `wall_estimated` (its setup is then unknown).
- test wall: test time / xdist workers, the share of the wall spent running tests.
- setup overhead: job wall - test wall (environment install, checkout, collection).
- wait: the longest job wall of a pipeline (what the developer waits for, jobs run in parallel).
- machine time: the sum of a pipeline's job walls (what is paid for).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pandas as pd

from analysis.rollups.shares import records_from_frame

RUN_WALL_COLUMNS: tuple[str, ...] = (
    "run_id",
    "pipeline",
    "job",
    "machine",
    "branch",
    "commit",
    "started_at",
    "day",
    "test_s",
    "test_wall_s",
    "wall_s",
    "wall_estimated",
    "setup_overhead_s",
)
JOB_COLUMNS: tuple[str, ...] = (
    "job",
    "machine",
    "runs",
    "wall_p50_s",
    "wall_max_s",
    "test_p50_s",
    "test_wall_p50_s",
    "setup_overhead_p50_s",
    "setup_share",
    "machine_s",
    "estimated_walls",
)
PIPELINE_COLUMNS: tuple[str, ...] = (
    "pipeline",
    "started_at",
    "day",
    "branch",
    "commit",
    "jobs",
    "wait_s",
    "machine_s",
    "test_s",
    "setup_overhead_s",
    "critical_job",
    "estimated_walls",
)


@dataclass(frozen=True)
class PipelineSummary:
    """One row per CI pipeline run (PIPELINE_COLUMNS), newest first, plus what was estimated.

    `estimated_walls` counts jobs whose wall was estimated from test time; runs without a
    pipeline id count as pipelines of one job (`run:<run_id>`).
    """

    pipelines: pd.DataFrame
    runs: int
    estimated_walls: int
    runs_without_pipeline: int

    def to_records(self) -> list[dict[str, Any]]:
        """The pipeline rows as JSON-ready dicts."""
        return records_from_frame(self.pipelines)


def run_test_seconds(results: pd.DataFrame) -> pd.Series:
    """Sum of known test durations per run_id (the `test_s` the database stores per run)."""
    durations = results["duration_s"].astype(float).fillna(0.0)
    return durations.groupby(results["run_id"].to_numpy()).sum().rename("test_s")


def with_test_seconds(runs: pd.DataFrame, results: pd.DataFrame | None = None) -> pd.DataFrame:
    """The runs frame with a `test_s` column: kept when present, else summed from results."""
    if "test_s" in runs.columns:
        return runs
    if results is None:
        raise ValueError("runs have no test_s column: pass the results to compute it")
    out = runs.copy()
    out["test_s"] = out["run_id"].map(run_test_seconds(results)).fillna(0.0).astype(float)
    return out


def run_walls(runs: pd.DataFrame, *, results: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per run: test time, test wall, job wall (uploaded or estimated) and setup overhead."""
    frame = with_test_seconds(runs, results)
    workers = pd.to_numeric(frame["xdist_workers"], errors="coerce").fillna(1).clip(lower=1)
    test_s = frame["test_s"].astype(float)
    test_wall = test_s / workers
    uploaded = pd.to_numeric(frame["wall_s"], errors="coerce").astype(float)
    estimated = uploaded.isna()
    started = pd.to_datetime(frame["started_at"], utc=True, errors="coerce")
    run_id = frame["run_id"].astype("int64")
    pipeline = frame["pipeline"].astype(object)
    pipeline = pipeline.where(pipeline.notna(), "run:" + run_id.astype(str))
    out = pd.DataFrame(
        {
            "run_id": run_id,
            "pipeline": pipeline,
            "job": frame["job"].astype(object),
            "machine": frame["machine"].astype(object),
            "branch": frame["branch"].astype(object),
            "commit": frame["commit"].astype(object),
            "started_at": started,
            "day": started.dt.tz_convert(None).dt.normalize(),
            "test_s": test_s,
            "test_wall_s": test_wall,
            "wall_s": uploaded.where(~estimated, test_wall),
            "wall_estimated": estimated.to_numpy(dtype=bool),
            "setup_overhead_s": uploaded - test_wall,
        }
    )
    return out.reset_index(drop=True)


def pipeline_summary(runs: pd.DataFrame, *, results: pd.DataFrame | None = None) -> PipelineSummary:
    """Wait (longest job wall), machine time (sum of walls) and critical job per pipeline."""
    walls = run_walls(runs, results=results)
    # The critical job is the longest; ties go to the job named first.
    ordered = walls.sort_values(["pipeline", "job"]).sort_values(
        "wall_s", ascending=False, kind="stable"
    )
    critical = ordered.drop_duplicates("pipeline").set_index("pipeline")["job"]
    grouped = walls.groupby("pipeline", sort=False)
    table = grouped.agg(
        started_at=("started_at", "min"),
        branch=("branch", "first"),
        commit=("commit", "first"),
        jobs=("run_id", "count"),
        wait_s=("wall_s", "max"),
        machine_s=("wall_s", "sum"),
        test_s=("test_s", "sum"),
        estimated_walls=("wall_estimated", "sum"),
    )
    table["setup_overhead_s"] = grouped["setup_overhead_s"].sum(min_count=1)
    table["critical_job"] = critical
    table["estimated_walls"] = table["estimated_walls"].astype("int64")
    table["day"] = table["started_at"].dt.tz_convert(None).dt.normalize()
    table = table.reset_index().sort_values(
        ["started_at", "pipeline"], ascending=[False, True], na_position="last"
    )
    no_pipeline = runs["pipeline"].isna().to_numpy(dtype=bool)
    return PipelineSummary(
        pipelines=table[list(PIPELINE_COLUMNS)].reset_index(drop=True),
        runs=len(walls),
        estimated_walls=int(walls["wall_estimated"].sum()),
        runs_without_pipeline=int(no_pipeline.sum()),
    )


def job_summary(runs: pd.DataFrame, *, results: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per job: runs, median wall, median test time and setup overhead, longest wall first.

    Medians are pandas medians (midpoint of the two middle values). Setup overhead only counts
    runs with an uploaded wall; `setup_share` is median overhead / median uploaded wall.
    """
    walls = run_walls(runs, results=results)
    walls["uploaded_wall_s"] = walls["wall_s"].where(~walls["wall_estimated"])
    grouped = walls.groupby("job", sort=False)
    table = grouped.agg(
        runs=("run_id", "count"),
        wall_p50_s=("wall_s", "median"),
        wall_max_s=("wall_s", "max"),
        test_p50_s=("test_s", "median"),
        test_wall_p50_s=("test_wall_s", "median"),
        setup_overhead_p50_s=("setup_overhead_s", "median"),
        uploaded_wall_p50_s=("uploaded_wall_s", "median"),
        machine_s=("wall_s", "sum"),
        estimated_walls=("wall_estimated", "sum"),
    )
    table["setup_share"] = table["setup_overhead_p50_s"] / table["uploaded_wall_p50_s"].where(
        table["uploaded_wall_p50_s"] > 0
    )
    table["machine"] = walls.groupby("job", sort=False)["machine"].agg(_most_common)
    table["estimated_walls"] = table["estimated_walls"].astype("int64")
    table = table.drop(columns="uploaded_wall_p50_s").reset_index()[list(JOB_COLUMNS)]
    return table.sort_values(["wall_p50_s", "job"], ascending=[False, True]).reset_index(drop=True)


def daily_trend(runs: pd.DataFrame, *, results: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per day (of the pipeline's first job): wait median and max, machine, test, setup time.

    Pipelines without a start time are left out. Sums are over the day's pipelines.
    """
    summary = pipeline_summary(runs, results=results).pipelines
    dated = summary.loc[summary["day"].notna()]
    grouped = dated.groupby("day", sort=True)
    table = grouped.agg(
        pipelines=("pipeline", "count"),
        jobs=("jobs", "sum"),
        wait_p50_s=("wait_s", "median"),
        wait_max_s=("wait_s", "max"),
        machine_s=("machine_s", "sum"),
        test_s=("test_s", "sum"),
        estimated_walls=("estimated_walls", "sum"),
    )
    table["setup_overhead_s"] = grouped["setup_overhead_s"].sum(min_count=1)
    return table.reset_index()


def _most_common(values: pd.Series) -> Any:
    counts = values.dropna().value_counts()
    return counts.index[0] if len(counts) else None


__all__ = [
    "JOB_COLUMNS",
    "PIPELINE_COLUMNS",
    "RUN_WALL_COLUMNS",
    "PipelineSummary",
    "daily_trend",
    "job_summary",
    "pipeline_summary",
    "run_test_seconds",
    "run_walls",
    "with_test_seconds",
]
