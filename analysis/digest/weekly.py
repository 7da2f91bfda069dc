"""A week against the week before, from the weekly rollups: total test time in CI, and the
tests and files whose time per run grew most.

Growth is per run (a week with twice the pipelines is not a slower suite): the seconds a test
took per run this week minus last week's, for what ran in both weeks. Weeks start on Monday,
as the rollups keep them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

import pandas as pd

# Tests and files named per digest.
TOP = 10
# Below this a test did not grow, its timer jittered.
MIN_GROWTH_S = 0.01
# Columns the rollup frames carry: one row per (week, name) summed over cells.
COLUMNS = ("week", "name", "runs", "known", "total_s")


@dataclass(frozen=True)
class Growth:
    """A test or file whose seconds per run grew from last week to this one."""

    name: str
    seconds_per_run: float
    previous_seconds_per_run: float
    runs: int  # runs this week
    total_s: float  # all its seconds this week

    @property
    def delta_s(self) -> float:
        """Seconds per run added since last week."""
        return self.seconds_per_run - self.previous_seconds_per_run


@dataclass(frozen=True)
class WeeklyDigest:
    """One week of a project against the week before."""

    week: date  # its Monday
    ci_time_s: float
    previous_ci_time_s: float
    growing_tests: tuple[Growth, ...]
    growing_files: tuple[Growth, ...]

    @property
    def previous_week(self) -> date:
        """The Monday of the week before."""
        return self.week - timedelta(days=7)

    @property
    def delta_s(self) -> float:
        """CI test time added since last week."""
        return self.ci_time_s - self.previous_ci_time_s


def week_of(day: date) -> date:
    """The Monday of `day`'s week."""
    return day - timedelta(days=day.weekday())


def last_complete_week(today: date) -> date:
    """The Monday of the last week that has ended by `today`."""
    return week_of(today) - timedelta(days=7)


def _growth(frame: pd.DataFrame, week: date, top: int) -> tuple[Growth, ...]:
    """The `top` names whose seconds per run grew most from the week before to `week`."""
    if frame.empty:
        return ()
    per_run = frame.assign(per_run=frame["total_s"] / frame["known"].where(frame["known"] > 0))
    now = per_run[per_run["week"] == week].set_index("name")
    before = per_run[per_run["week"] == week - timedelta(days=7)].set_index("name")
    earlier = before[["per_run"]].rename(columns={"per_run": "per_run_before"})
    both = now.join(earlier, how="inner").dropna(subset=["per_run", "per_run_before"])
    both = both.assign(delta=both["per_run"] - both["per_run_before"])
    grown = both[both["delta"] >= MIN_GROWTH_S].sort_values(
        ["delta", "total_s"], ascending=[False, False], kind="stable"
    )
    return tuple(
        Growth(
            name=str(name),
            seconds_per_run=float(row["per_run"]),
            previous_seconds_per_run=float(row["per_run_before"]),
            runs=int(row["runs"]),
            total_s=float(row["total_s"]),
        )
        for name, row in grown.head(top).iterrows()
    )


def weekly_digest(
    tests: pd.DataFrame, files: pd.DataFrame, week: date, *, top: int = TOP
) -> WeeklyDigest:
    """The digest of `week` (a Monday) from per-(week, test) and per-(week, file) sums."""
    previous = week - timedelta(days=7)
    totals = tests.groupby("week")["total_s"].sum()
    return WeeklyDigest(
        week=week,
        ci_time_s=float(totals.get(week, 0.0)),
        previous_ci_time_s=float(totals.get(previous, 0.0)),
        growing_tests=_growth(tests, week, top),
        growing_files=_growth(files, week, top),
    )
