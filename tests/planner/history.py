"""Plain factories for planner tests: a results frame and a runs frame from a few numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ingest.model import results_frame
from model.frames import RUN_COLUMNS


def run_row(
    run_id: int,
    *,
    job: str = "test",
    wall_s: float = float("nan"),
    machine: str | None = "linux",
    pipeline: str | None = None,
    workers: int = 1,
    labels: Mapping[str, str] | None = None,
    started_at: str | None = None,
) -> dict[str, object]:
    """One runs-frame row."""
    return {
        "run_id": run_id,
        "pipeline": pipeline or f"p{run_id}",
        "job": job,
        "branch": "main",
        "commit": None,
        "machine": machine,
        "started_at": pd.Timestamp(started_at, tz="UTC") if started_at else pd.NaT,
        "wall_s": wall_s,
        "peak_rss_mib": np.nan,
        "xdist_workers": workers,
        "labels": dict(labels or {}),
        "partial": False,
        "hidden_rows": 0,
    }


def runs_frame(rows: Sequence[dict[str, object]]) -> pd.DataFrame:
    """A runs frame from run_row dicts."""
    return pd.DataFrame(list(rows), columns=list(RUN_COLUMNS))


def results_for(run_id: int, durations: Mapping[str, float]) -> pd.DataFrame:
    """A results frame of one run: nodeid -> total seconds (given as duration_s)."""
    ids = list(durations)
    frame = results_frame(
        {
            "nodeid": ids,
            "file": [i.split("::")[0] for i in ids],
            "classname": [i.split("::")[1] if i.count("::") >= 2 else None for i in ids],
            "function": [i.split("::")[-1] for i in ids],
            "outcome": ["passed"] * len(ids),
            "duration_s": [durations[i] for i in ids],
        }
    )
    frame["run_id"] = run_id
    return frame


def one_job(
    durations: Mapping[str, float], *, overhead_s: float = 0.0, workers: int = 1, runs: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`runs` identical runs of a single job whose wall is overhead + test time / workers."""
    wall = overhead_s + sum(durations.values()) / workers
    results = pd.concat([results_for(r, durations) for r in range(1, runs + 1)], ignore_index=True)
    rows = [run_row(r, wall_s=wall, workers=workers) for r in range(1, runs + 1)]
    return results, runs_frame(rows)
