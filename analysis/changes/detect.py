"""Lasting steps in one duration series: the whole history at once, or only what is new.

The detector is online by definition: after each run it looks at the window of runs since
the last change (at most `settings.window` runs) and names a change when that window's best
split passes the thresholds (analysis/changes/windows.py); the change's first run becomes the
start of the next window. So the changes found depend only on the runs, never on how they
arrived: a whole history scanned at once (`detect_changes`) and the same runs fed a few at a
time through `update_state` give the same changes, and an update costs only the new runs
times the bounded window.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.changes.change import Change, make_change
from analysis.changes.points import SeriesPoints, log_durations, series_points
from analysis.changes.settings import DEFAULT_SETTINGS, DetectionSettings
from analysis.changes.windows import judge_windows

# Prefixes judged per numpy pass; a change ends the pass early, so this bounds wasted work.
BLOCK = 256


@dataclass(frozen=True)
class SeriesState:
    """What a series must keep between uploads: its run count, where its current segment
    starts, and its last runs since then (at most `settings.window`)."""

    count: int
    anchor: int  # series position of the first run after the last change (0: none yet)
    tail: SeriesPoints  # runs anchor-or-later, the newest last, at most settings.window

    @property
    def tail_start(self) -> int:
        """Series position of the tail's first run."""
        return self.count - len(self.tail)


def empty_state() -> SeriesState:
    """The state of a series with no runs yet."""
    empty = np.array([], dtype=object)
    tail = SeriesPoints(
        np.array([], dtype=float),
        np.array([], dtype=np.int64),
        empty,
        np.array([], dtype="datetime64[ns]"),
        empty.copy(),
    )
    return SeriesState(count=0, anchor=0, tail=tail)


def detect_changes(
    frame: pd.DataFrame | SeriesPoints, settings: DetectionSettings = DEFAULT_SETTINGS
) -> tuple[Change, ...]:
    """Every lasting change in a series (rows in run order; see points.POINT_COLUMNS)."""
    points = frame if isinstance(frame, SeriesPoints) else series_points(frame)
    changes, _ = scan_points(points, offset=0, anchor=0, first_end=1, settings=settings)
    return tuple(changes)


def update_state(
    state: SeriesState,
    new: pd.DataFrame | SeriesPoints,
    settings: DetectionSettings = DEFAULT_SETTINGS,
) -> tuple[SeriesState, tuple[Change, ...]]:
    """The state after the new runs, and the changes they confirmed; work ~ new runs x window."""
    fresh = new if isinstance(new, SeriesPoints) else series_points(new)
    if len(fresh) == 0:
        return state, ()
    joined = _concat(state.tail, fresh)
    offset = state.tail_start
    changes, anchor = scan_points(
        joined,
        offset=offset,
        anchor=state.anchor - offset,
        first_end=len(state.tail) + 1,
        settings=settings,
    )
    count = state.count + len(fresh)
    keep_from = max(anchor, len(joined) - settings.window)
    tail = joined.slice(keep_from, len(joined))
    return SeriesState(count=count, anchor=offset + anchor, tail=tail), tuple(changes)


def scan_points(
    points: SeriesPoints,
    *,
    offset: int,
    anchor: int,
    first_end: int,
    settings: DetectionSettings,
) -> tuple[list[Change], int]:
    """Judge the windows ending after each run from position first_end - 1 on.

    Positions are relative to `points`; `offset` is the series position of points[0]. Returns
    the changes confirmed and the (relative) start of the last segment."""
    n = len(points)
    width = settings.window
    logs = log_durations(points.duration_s, settings.floor_s)
    codes = machine_codes(points.machine)
    has_machines = bool((codes >= 0).any())
    changes: list[Change] = []
    end = max(first_end, anchor + settings.min_runs)
    while end <= n:
        ends = np.arange(end, min(n, end + BLOCK - 1) + 1)
        starts = np.maximum(anchor, ends - width)
        idx = ends[:, None] - width + np.arange(width)[None, :]
        inside = idx >= starts[:, None]
        safe = np.clip(idx, 0, n - 1)
        window_logs = np.where(inside, logs[safe], np.nan)
        window_codes = np.where(inside, codes[safe], -1) if has_machines else None
        verdicts = judge_windows(window_logs, window_codes, settings)
        if not verdicts.fired.any():
            end = int(ends[-1]) + 1
            continue
        row = int(np.argmax(verdicts.fired))
        start, stop = int(starts[row]), int(ends[row])
        split = int(verdicts.split[row]) - (width - (stop - start))
        changes.append(
            make_change(
                level=verdicts.level[row, width - (stop - start) :],
                split=split,
                z=float(verdicts.z[row]),
                first_index=offset + start,
                run_id=points.run_id[start:stop],
                commit=points.commit[start:stop],
                started_at=points.started_at[start:stop],
                settings=settings,
            )
        )
        anchor = start + split
        # The same run is judged again against the new segment (it may hold a second step).
        end = max(stop, anchor + settings.min_runs)
    return changes, anchor


def machine_codes(machine: np.ndarray) -> np.ndarray:
    """Machine type names as small integer codes, -1 where unknown."""
    if len(machine) == 0:
        return np.array([], dtype=np.int64)
    codes, _ = pd.factorize(pd.Series(machine, dtype=object), use_na_sentinel=True)
    return np.asarray(codes, dtype=np.int64)


def _concat(a: SeriesPoints, b: SeriesPoints) -> SeriesPoints:
    return SeriesPoints(
        np.concatenate([a.duration_s, b.duration_s]),
        np.concatenate([a.run_id, b.run_id]),
        np.concatenate([a.commit, b.commit]),
        np.concatenate([a.started_at, b.started_at]),
        np.concatenate([a.machine, b.machine]),
    )
