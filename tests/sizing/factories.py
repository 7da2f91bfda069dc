"""Tiny histories for sizing tests: runs and results frames from a few hand-picked numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ingest.model import results_frame
from model.frames import RUN_COLUMNS


def results_for(
    run_id: int,
    durations: Mapping[str, float],
    peaks: Mapping[str, float] | None = None,
) -> pd.DataFrame:
    """One run's results: nodeid -> seconds, and optionally nodeid -> peak RSS MiB."""
    ids = list(durations)
    frame = results_frame(
        {
            "nodeid": ids,
            "file": [i.split("::")[0] for i in ids],
            "function": [i.split("::")[-1] for i in ids],
            "outcome": ["passed"] * len(ids),
            "duration_s": [durations[i] for i in ids],
            "peak_rss_mib": [(peaks or {}).get(i, np.nan) for i in ids],
        }
    )
    frame["run_id"] = run_id
    return frame


def run_row(
    run_id: int,
    *,
    job: str = "test",
    machine: str | None = "medium",
    wall_s: float = float("nan"),
    workers: int = 1,
    peak_rss_mib: float = float("nan"),
    started_at: str | None = None,
    pipeline: str | None = None,
    labels: Mapping[str, str] | None = None,
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
        "peak_rss_mib": peak_rss_mib,
        "xdist_workers": workers,
        "labels": dict(labels or {}),
        "partial": False,
        "hidden_rows": 0,
    }


def runs_frame(rows: Sequence[dict[str, object]]) -> pd.DataFrame:
    """A runs frame from run_row dicts."""
    return pd.DataFrame(list(rows), columns=list(RUN_COLUMNS))
