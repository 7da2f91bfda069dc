"""Many series' detector states side by side, so one upload's new runs are judged in one pass.

An upload adds one run to every series it touches (each test, file and function of the job's
cell, the job wall, ...): thousands of series, one point each. `SeriesTable.push` shifts each
touched row's window by that point and judges all of them with one vectorised scan; only rows
that hold a change take a second look. The answers equal `update_state`'s for each series.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.changes.change import Change, make_change
from analysis.changes.detect import SeriesState
from analysis.changes.points import SeriesPoints, log_durations
from analysis.changes.settings import DEFAULT_SETTINGS, DetectionSettings
from analysis.changes.windows import judge_windows


class SeriesTable:
    """Row i holds series i's tail (right-aligned, NaN before it), run count and anchor.

    Mutable on purpose: `push` updates the touched rows in place, so an upload touching ten
    thousand series copies nothing else."""

    def __init__(self, size: int, settings: DetectionSettings = DEFAULT_SETTINGS) -> None:
        width = settings.window
        self.settings = settings
        self.duration_s = np.full((size, width), np.nan)
        self.machine = np.full((size, width), -1, dtype=np.int32)
        self.run_id = np.zeros((size, width), dtype=np.int64)
        self.commit = np.full((size, width), "", dtype=object)
        self.started_at = np.zeros((size, width), dtype="datetime64[ns]")
        self.count = np.zeros(size, dtype=np.int64)
        self.anchor = np.zeros(size, dtype=np.int64)
        self.machines: list[str] = []

    @classmethod
    def from_states(
        cls, states: Sequence[SeriesState], settings: DetectionSettings = DEFAULT_SETTINGS
    ) -> SeriesTable:
        """A table whose rows are these series' states, in order."""
        table = cls(len(states), settings)
        width = settings.window
        for i, state in enumerate(states):
            tail = state.tail
            k = len(tail)
            if k > width:
                raise ValueError(f"a tail of {k} runs does not fit a window of {width}")
            table.duration_s[i, width - k :] = tail.duration_s
            table.machine[i, width - k :] = table._codes(tail.machine)
            table.run_id[i, width - k :] = tail.run_id
            table.commit[i, width - k :] = tail.commit
            table.started_at[i, width - k :] = tail.started_at
            table.count[i] = state.count
            table.anchor[i] = state.anchor
        return table

    def state(self, row: int) -> SeriesState:
        """Row `row` as one series' state."""
        k = self._lengths(np.array([row]))[0]
        cols = slice(self.settings.window - k, None)
        names = np.array([None, *self.machines], dtype=object)
        tail = SeriesPoints(
            self.duration_s[row, cols].copy(),
            self.run_id[row, cols].copy(),
            self.commit[row, cols].copy(),
            self.started_at[row, cols].copy(),
            names[self.machine[row, cols] + 1],
        )
        return SeriesState(count=int(self.count[row]), anchor=int(self.anchor[row]), tail=tail)

    def push(
        self,
        rows: np.ndarray,
        duration_s: np.ndarray,
        run_id: np.ndarray,
        commit: np.ndarray,
        started_at: np.ndarray,
        machine: np.ndarray | None = None,
    ) -> list[tuple[int, Change]]:
        """Add one run to each of `rows` (distinct) and return (row, change) for each change.

        Durations must be real numbers (quiet-machine seconds, as series_points makes them)."""
        rows = np.asarray(rows, dtype=np.int64)
        if len(np.unique(rows)) != len(rows):
            raise ValueError("push takes one run per series; push again for the next")
        duration = np.asarray(duration_s, dtype=float)
        if np.isnan(duration).any():
            raise ValueError("a pushed duration is NaN")
        for array, new in (
            (self.duration_s, duration),
            (self.machine, self._codes(machine) if machine is not None else -1),
            (self.run_id, np.asarray(run_id, dtype=np.int64)),
            (self.commit, np.asarray(commit, dtype=object)),
            (self.started_at, np.asarray(started_at, dtype="datetime64[ns]")),
        ):
            array[rows, :-1] = array[rows, 1:]
            array[rows, -1] = new
        self.count[rows] += 1
        found: list[tuple[int, Change]] = []
        pending = rows[self._lengths(rows) >= self.settings.min_runs]
        while len(pending):
            pending = self._judge(pending, found)
        return found

    def _judge(self, rows: np.ndarray, found: list[tuple[int, Change]]) -> np.ndarray:
        """Judge these rows' windows; record changes, cut their tails; rows to judge again."""
        settings = self.settings
        width = settings.window
        logs = log_durations(self.duration_s[rows], settings.floor_s)
        codes = self.machine[rows]
        verdicts = judge_windows(logs, codes if (codes >= 0).any() else None, settings)
        again = []
        for i in np.flatnonzero(verdicts.fired):
            row = int(rows[i])
            k = int(np.count_nonzero(~np.isnan(logs[i])))
            first = width - k
            split = int(verdicts.split[i]) - first
            start = int(self.count[row]) - k
            found.append(
                (
                    row,
                    make_change(
                        level=verdicts.level[i, first:],
                        split=split,
                        z=float(verdicts.z[i]),
                        first_index=start,
                        run_id=self.run_id[row, first:],
                        commit=self.commit[row, first:],
                        started_at=self.started_at[row, first:],
                        settings=settings,
                    ),
                )
            )
            self.anchor[row] = start + split
            self.duration_s[row, : first + split] = np.nan
            if k - split >= settings.min_runs:
                again.append(row)
        return np.array(again, dtype=np.int64)

    def _lengths(self, rows: np.ndarray) -> np.ndarray:
        lengths: np.ndarray = np.minimum(self.count[rows] - self.anchor[rows], self.settings.window)
        return lengths

    def _codes(self, names: np.ndarray) -> np.ndarray:
        """Machine type names as codes into self.machines (new names are added); -1: unknown."""
        values = pd.Series(np.asarray(names, dtype=object), dtype=object)
        unknown = values.isna()
        fresh = pd.unique(values[~unknown & ~values.isin(self.machines)])
        self.machines.extend(str(name) for name in fresh)
        codes = pd.Index(self.machines).get_indexer(pd.Index(values.where(~unknown, None)))
        coded: np.ndarray = np.where(unknown.to_numpy(), -1, codes).astype(np.int32)
        return coded
