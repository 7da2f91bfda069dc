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
    (change,) = make_changes(
        level=level[None, :],
        split=np.array([split]),
        z=np.array([z]),
        first_index=np.array([first_index]),
        run_id=run_id[None, :],
        commit=commit[None, :],
        started_at=started_at[None, :],
        settings=settings,
    )
    return change


def make_changes(
    *,
    level: np.ndarray,
    split: np.ndarray,
    z: np.ndarray,
    first_index: np.ndarray,
    run_id: np.ndarray,
    commit: np.ndarray,
    started_at: np.ndarray,
    settings: DetectionSettings,
) -> list[Change]:
    """The change at column `split[i]` of each row's window, all rows at once: a step every
    series of a cell shares (a new runner image) is thousands of changes in one upload.

    Rows are right-aligned windows (`level` NaN before each row's runs; the other arrays are
    read where `level` is not); `first_index` is the series position of each row's first run.
    Each number is the one a single row's arithmetic gives (quantiles are taken per row)."""
    width = level.shape[1]
    valid = ~np.isnan(level)
    after = valid & (np.arange(width)[None, :] >= split[:, None])
    before = valid & ~after
    seconds = np.exp(level)
    med_b = np.exp(masked_quantile(level, before, 0.5))
    med_a = np.exp(masked_quantile(level, after, 0.5))
    residual = level - np.where(after, np.log(med_a)[:, None], np.log(med_b)[:, None])
    iqr = masked_quantile(residual, valid, 0.75) - masked_quantile(residual, valid, 0.25)
    spread_b = masked_quantile(seconds, before, 0.75) - masked_quantile(seconds, before, 0.25)
    spread_a = masked_quantile(seconds, after, 0.75) - masked_quantile(seconds, after, 0.25)
    runs = valid.sum(axis=1)
    changes = []
    for i in range(level.shape[0]):
        k = int(runs[i])
        at = int(split[i])  # column of the first run after; at - 1 is the last before
        first = int(first_index[i])
        changes.append(
            Change(
                index=first + at - (width - k),
                confirmed_index=first + k - 1,
                run_id_before=int(run_id[i, at - 1]),
                commit_before=str(commit[i, at - 1]),
                at_before=_utc(started_at[i, at - 1]),
                run_id_after=int(run_id[i, at]),
                commit_after=str(commit[i, at]),
                at_after=_utc(started_at[i, at]),
                runs_before=at - (width - k),
                runs_after=width - at,
                median_before_s=float(med_b[i]),
                median_after_s=float(med_a[i]),
                spread_before_s=float(spread_b[i]) / IQR_SIGMA,
                spread_after_s=float(spread_a[i]) / IQR_SIGMA,
                noise=max(float(iqr[i]) / IQR_SIGMA, settings.min_noise),
                z=float(z[i]),
            )
        )
    return changes


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
