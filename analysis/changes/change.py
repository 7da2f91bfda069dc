"""A lasting change in a duration series: where it starts, how large, how sure, which commits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd

from analysis.changes.settings import DetectionSettings
from analysis.changes.windows import IQR_SIGMA, masked_quantile


@dataclass(frozen=True)
class Change:
    """One step in a series, as measured over the window that confirmed it.

    `index` is the series position of the first run after the step; the commit range is from
    the last run before it (`*_before`) to that first run after (`*_after`): the change was
    introduced by a commit in (commit_before, commit_after]."""

    index: int
    confirmed_index: int  # the series position of the run whose arrival confirmed it
    run_id_before: int
    commit_before: str
    at_before: datetime
    run_id_after: int
    commit_after: str
    at_after: datetime
    runs_before: int
    runs_after: int
    median_before_s: float
    median_after_s: float
    spread_before_s: float  # interquartile range / 1.349: a sigma that ignores outliers
    spread_after_s: float
    noise: float  # the window's relative noise (log sigma) within its two segments
    z: float  # Mann-Whitney statistic at the split, signed (+: slower after)

    @property
    def delta_s(self) -> float:
        """Seconds added per run (negative: saved)."""
        return self.median_after_s - self.median_before_s

    @property
    def relative(self) -> float:
        """The change as a share of the time before (0.05: 5% slower)."""
        return self.median_after_s / self.median_before_s - 1.0

    @property
    def sigmas(self) -> float:
        """The change in units of the series' own noise."""
        return float(np.log(self.median_after_s / self.median_before_s) / self.noise)

    @property
    def slower(self) -> bool:
        """True when the runs after take longer."""
        return self.median_after_s > self.median_before_s


def make_change(
    *,
    level: np.ndarray,
    split: int,
    z: float,
    first_index: int,
    run_id: np.ndarray,
    commit: np.ndarray,
    started_at: np.ndarray,
    settings: DetectionSettings,
) -> Change:
    """The change at position `split` of one window (all arrays: the window's valid runs).

    `level` is the window's log durations with machine speeds taken out; `first_index` is the
    series position of the window's first run."""
    seconds = np.exp(level)[None, :]
    after = np.arange(len(level))[None, :] >= split
    before = ~after

    def stat(mask: np.ndarray, q: float) -> float:
        return float(masked_quantile(seconds, mask, q)[0])

    med_b = float(np.exp(masked_quantile(level[None, :], before, 0.5)[0]))
    med_a = float(np.exp(masked_quantile(level[None, :], after, 0.5)[0]))
    residual = level[None, :] - np.where(after, np.log(med_a), np.log(med_b))
    everything = np.ones_like(after)
    iqr = float(
        masked_quantile(residual, everything, 0.75)[0]
        - masked_quantile(residual, everything, 0.25)[0]
    )
    return Change(
        index=first_index + split,
        confirmed_index=first_index + len(level) - 1,
        run_id_before=int(run_id[split - 1]),
        commit_before=str(commit[split - 1]),
        at_before=_utc(started_at[split - 1]),
        run_id_after=int(run_id[split]),
        commit_after=str(commit[split]),
        at_after=_utc(started_at[split]),
        runs_before=split,
        runs_after=len(level) - split,
        median_before_s=med_b,
        median_after_s=med_a,
        spread_before_s=(stat(before, 0.75) - stat(before, 0.25)) / IQR_SIGMA,
        spread_after_s=(stat(after, 0.75) - stat(after, 0.25)) / IQR_SIGMA,
        noise=max(iqr / IQR_SIGMA, settings.min_noise),
        z=float(z),
    )


def _utc(value: np.datetime64) -> datetime:
    stamp = pd.Timestamp(value)
    return (stamp.tz_localize("UTC") if stamp.tzinfo is None else stamp).to_pydatetime()


def changes_frame(changes: tuple[Change, ...] | list[Change]) -> pd.DataFrame:
    """Changes as rows, with the derived sizes as columns (for tables and the benchmark)."""
    rows = [
        {**c.__dict__, "delta_s": c.delta_s, "relative": c.relative, "sigmas": c.sigmas}
        for c in changes
    ]
    return pd.DataFrame(rows)
