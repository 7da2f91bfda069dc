"""A duration series as the detector reads it: one row per run, in the order the runs happened.

A series is whatever laptime tracks over a default branch's runs: one test, function or file
in one job cell, a cell's job wall, a pipeline's wall or machine time. The caller picks the
runs (default branch, passed outcomes) and their order; this module only reads and cleans them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.split.job_model import quiet_wall

# Columns a series frame must have; `machine`, `cpu_s` and `cpu_share` are optional.
POINT_COLUMNS = ("run_id", "commit", "started_at", "duration_s")


@dataclass(frozen=True)
class SeriesPoints:
    """The runs of one series as arrays of equal length, oldest first."""

    duration_s: np.ndarray  # float64: quiet-machine seconds where CPU share was recorded
    run_id: np.ndarray  # int64
    commit: np.ndarray  # object: str
    started_at: np.ndarray  # datetime64[ns], UTC
    machine: np.ndarray  # object: machine type name, or None where unknown

    def __len__(self) -> int:
        return len(self.duration_s)

    def slice(self, start: int, stop: int) -> SeriesPoints:
        """Runs start..stop-1."""
        return SeriesPoints(
            self.duration_s[start:stop],
            self.run_id[start:stop],
            self.commit[start:stop],
            self.started_at[start:stop],
            self.machine[start:stop],
        )


def series_points(frame: pd.DataFrame) -> SeriesPoints:
    """The frame's runs as arrays, in row order, durations normalised to a quiet machine.

    Where both `cpu_s` and `cpu_share` (the CPU share per process the run got) are known, only
    the CPU part of the duration is taken as slowed by a busy machine (the job model's
    `quiet_wall`); elsewhere the duration is kept as measured."""
    missing = [c for c in POINT_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"series frame lacks columns {missing}")
    wall = pd.to_numeric(frame["duration_s"], errors="coerce").astype(float)
    if "cpu_s" in frame.columns and "cpu_share" in frame.columns:
        cpu = pd.to_numeric(frame["cpu_s"], errors="coerce").astype(float)
        share = pd.to_numeric(frame["cpu_share"], errors="coerce").astype(float)
        wall = quiet_wall(wall, cpu, share)
    machine = (
        frame["machine"].astype(object).where(frame["machine"].notna(), None).to_numpy()
        if "machine" in frame.columns
        else np.full(len(frame), None, dtype=object)
    )
    return SeriesPoints(
        duration_s=wall.to_numpy(dtype=float),
        run_id=frame["run_id"].to_numpy(dtype=np.int64),
        commit=frame["commit"].astype(object).to_numpy(),
        started_at=pd.to_datetime(frame["started_at"], utc=True).to_numpy(dtype="datetime64[ns]"),
        machine=np.asarray(machine, dtype=object),
    )


def log_durations(duration_s: np.ndarray, floor_s: float) -> np.ndarray:
    """Natural-log durations, floored (a 0 s timing is below any timer); NaN stays NaN."""
    logs: np.ndarray = np.log(np.maximum(duration_s, floor_s))
    return logs
