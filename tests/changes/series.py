"""Duration series for the change tests: seeded draws, shaped like real test timings."""

from __future__ import annotations

import numpy as np
import pandas as pd


def series_frame(
    duration_s: np.ndarray,
    *,
    machine: np.ndarray | None = None,
    cpu_s: np.ndarray | None = None,
    cpu_share: np.ndarray | None = None,
) -> pd.DataFrame:
    """A default-branch series: one run every 8 hours, run ids from 1001, commits c0, c1, ..."""
    n = len(duration_s)
    frame = pd.DataFrame(
        {
            "run_id": np.arange(1001, 1001 + n),
            "commit": [f"c{i:03d}" for i in range(n)],
            "started_at": pd.date_range("2026-01-05 08:00", periods=n, freq="8h", tz="UTC"),
            "duration_s": duration_s,
        }
    )
    for name, values in (("machine", machine), ("cpu_s", cpu_s), ("cpu_share", cpu_share)):
        if values is not None:
            frame[name] = values
    return frame


def lognormal(rng: np.random.Generator, n: int, level_s: float, sigma: float) -> np.ndarray:
    """`n` durations around `level_s` with multiplicative (log) noise `sigma`."""
    return level_s * np.exp(rng.normal(0.0, sigma, n))


def with_step(values: np.ndarray, at: int, factor: float) -> np.ndarray:
    """The values with every run from `at` on taking `factor` times as long."""
    out = values.copy()
    out[at:] *= factor
    return out
