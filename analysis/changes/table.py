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

from analysis.changes.change import Change, make_changes
from analysis.changes.detect import SeriesState
from analysis.changes.points import SeriesPoints, log_durations
from analysis.changes.settings import DEFAULT_SETTINGS, DetectionSettings
from analysis.changes.windows import judge_windows, midranks


class SeriesTable:
    """Row i holds series i's tail (right-aligned, NaN before it), run count and anchor.

    Mutable on purpose: `push` updates the touched rows in place, so an upload touching ten
    thousand series copies nothing else. Besides the tails it keeps what judging derives from
    them: the floored log durations, and per row the midranks of those logs and their tie
    sum, updated by each push in a few comparisons per window instead of a sort per window
    (rows whose ranks are not known, after a cut or a replay, are ranked afresh)."""

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
        # Derived from duration_s: the judge's input, and its ranks where `ranked` says so.
        self.logs = np.full((size, width), np.nan)
        self.ranks = np.zeros((size, width))
        self.tie_sum = np.zeros(size)
        self.ranked = np.zeros(size, dtype=bool)

    @classmethod
    def restore(
        cls,
        count: np.ndarray,
        anchor: np.ndarray,
        duration_s: np.ndarray,
        run_id: np.ndarray,
        settings: DetectionSettings = DEFAULT_SETTINGS,
    ) -> SeriesTable:
        """A table from stored rows: counts, anchors, windows of durations and run ids."""
        table = cls(len(count), settings)
        table.count[:] = count
        table.anchor[:] = anchor
        table.duration_s[:] = duration_s
        table.run_id[:] = run_id
        table.logs[:] = log_durations(table.duration_s, settings.floor_s)
        return table

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
        table.logs[:] = log_durations(table.duration_s, settings.floor_s)
        return table

    def grown(self, extra: int) -> SeriesTable:
        """This table with `extra` empty rows added at the end."""
        n = len(self.count)
        bigger = SeriesTable(n + extra, self.settings)
        for name in (
            "duration_s", "machine", "run_id", "commit", "started_at", "count", "anchor",
            "logs", "ranks", "tie_sum", "ranked",
        ):  # fmt: skip
            getattr(bigger, name)[:n] = getattr(self, name)
        bigger.machines = list(self.machines)
        return bigger

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
        """Add one run to each of `rows` (distinct) and return (row, change) for each change,
        in the order of `rows` (then of the changes a row holds).

        Durations must be real numbers (quiet-machine seconds, as series_points makes them)."""
        rows = np.asarray(rows, dtype=np.int64)
        # In table order, so that an upload touching every series works on views, not copies.
        order = np.argsort(rows, kind="stable")
        rows = rows[order]
        if len(rows) > 1 and (rows[1:] == rows[:-1]).any():
            raise ValueError("push takes one run per series; push again for the next")
        duration = np.asarray(duration_s, dtype=float)[order]
        if np.isnan(duration).any():
            raise ValueError("a pushed duration is NaN")
        codes = self._codes(machine)[order] if machine is not None else -1
        self._append(
            rows,
            duration,
            (
                (self.machine, codes),
                (self.run_id, np.asarray(run_id, dtype=np.int64)[order]),
                (self.commit, np.asarray(commit, dtype=object)[order]),
                (self.started_at, np.asarray(started_at, dtype="datetime64[ns]")[order]),
            ),
        )
        position = np.empty(len(self.count), dtype=np.int64)
        position[rows] = order  # where each row came in `rows` as given
        found: list[tuple[int, Change]] = []
        pending = rows[self._lengths(rows) >= self.settings.min_runs]
        while len(pending):
            done = len(found)
            pending = self._judge(pending, found)
            found[done:] = sorted(found[done:], key=lambda rc: position[rc[0]])
        return found

    def replay(
        self,
        rows: np.ndarray,
        duration_s: np.ndarray,
        run_id: int,
        moved: np.ndarray,
        moved_to: np.ndarray,
    ) -> None:
        """Apply a push recorded earlier without judging again: the same state `push` left,
        given the rows whose anchors its changes moved and where to."""
        rows = np.asarray(rows, dtype=np.int64)
        order = np.argsort(rows, kind="stable")
        duration = np.asarray(duration_s, dtype=float)[order]
        self._append(rows[order], duration, ((self.run_id, run_id),))
        if len(moved):
            self.anchor[moved] = moved_to
            self._cut(np.sort(np.asarray(moved, dtype=np.int64)))

    def _at(self, rows: np.ndarray) -> slice | np.ndarray:
        """Sorted distinct `rows` as an index: a slice (views, no copies) when they are every
        row of the table."""
        n = len(self.count)
        every = len(rows) == n and (n == 0 or (rows[0] == 0 and rows[-1] == n - 1))
        return slice(None) if every else rows

    def _append(
        self,
        rows: np.ndarray,
        duration: np.ndarray,
        others: tuple[tuple[np.ndarray, object], ...],
    ) -> None:
        """Shift each row's window left by one and put the new run last; ranks follow.
        `rows` sorted and distinct."""
        at = self._at(rows)
        logs = log_durations(duration, self.settings.floor_s)
        full = self._lengths(rows) >= self.settings.window
        dropped = np.where(full, self.logs[at, 0], np.nan)  # the run leaving the window
        for array, new in ((self.duration_s, duration), (self.logs, logs), *others):
            array[at, :-1] = array[at, 1:]
            array[at, -1] = new
        self.count[at] += 1
        keep = self.ranked[at]
        if keep.all():
            self._rerank(rows, dropped, logs)
        elif keep.any():
            self._rerank(rows[keep], dropped[keep], logs[keep])

    def _rerank(self, rows: np.ndarray, dropped: np.ndarray, added: np.ndarray) -> None:
        """Midranks and tie sums of `rows` after their windows lost `dropped` (NaN: none)
        and gained `added` as their last run (already in self.logs), without sorting.

        A value's midrank is (values below it) + (values equal to it, itself included, + 1)/2,
        so losing u moves it by -[u < x] - [u == x]/2 and gaining v by +[v < x] + [v == x]/2;
        a tie group of t values adds t^3 - t to the tie sum. All are halves of integers: exact."""
        at = self._at(rows)
        rest = self.logs[at, :-1]  # NaN outside the window: every comparison is False
        u = dropped[:, None]
        v = added[:, None]
        u_equal = rest == u
        v_equal = rest == v
        # Twice the move of each kept rank, in small integers: 2[v < x] + [v == x] - (same, u).
        twice = (rest > v).view(np.int8) << 1
        twice += v_equal.view(np.int8)
        twice -= (rest > u).view(np.int8) << 1
        twice -= u_equal.view(np.int8)
        # The kept runs' ranks (before the shift) moved, written one column left.
        moved = 0.5 * twice
        if isinstance(at, slice):
            np.add(self.ranks[:, 1:], moved, out=self.ranks[:, :-1])  # overlap: numpy buffers
        else:
            self.ranks[at, :-1] = self.ranks[at, 1:] + moved
        below_v = np.count_nonzero(rest < v, axis=1)
        same_u = np.count_nonzero(u_equal, axis=1)  # u's others, still in the window
        same_v = np.count_nonzero(v_equal, axis=1)
        self.ranks[at, -1] = below_v + same_v / 2.0 + 1.0
        # Losing u from a group of t = same_u + 1: -3t(t-1); v joining a group of same_v: +3s(s+1).
        dropped_any = ~np.isnan(dropped)
        self.tie_sum[at] += np.where(dropped_any, -3.0 * (same_u + 1) * same_u, 0.0)
        self.tie_sum[at] += 3.0 * same_v * (same_v + 1)

    def _cut(self, rows: np.ndarray) -> None:
        """Blank each row's runs before its anchor; their ranks are taken afresh when needed."""
        width = self.settings.window
        keep = np.minimum(self.count[rows] - self.anchor[rows], width)
        cut = np.arange(width)[None, :] < (width - keep)[:, None]
        for array in (self.duration_s, self.logs):
            block = array[rows]
            block[cut] = np.nan
            array[rows] = block
        self.ranks[rows] = 0.0
        self.tie_sum[rows] = 0.0
        self.ranked[rows] = False

    def _judge(self, rows: np.ndarray, found: list[tuple[int, Change]]) -> np.ndarray:
        """Judge these rows' windows (sorted, distinct); record changes, cut their tails;
        return the rows to judge again."""
        settings = self.settings
        width = settings.window
        at = self._at(rows)
        logs = self.logs[at]
        codes = self.machine[at]
        # Rows with machine types in their window are judged on levels with the types' speeds
        # taken out, ranked afresh; the others on their logs, with the ranks kept.
        mixed = ((codes >= 0) & ~np.isnan(logs)).any(axis=1)
        plain = slice(None) if not mixed.any() else np.flatnonzero(~mixed)
        plain_rows = rows[plain]
        unranked = plain_rows[~self.ranked[plain_rows]]
        if len(unranked):
            self.ranks[unranked], self.tie_sum[unranked] = midranks(
                self.logs[unranked], ~np.isnan(self.logs[unranked])
            )
            self.ranked[unranked] = True
        fired = np.zeros(len(rows), dtype=bool)
        split = np.zeros(len(rows), dtype=np.int64)
        z = np.zeros(len(rows))
        level = logs
        if len(plain_rows):
            plain_at = self._at(plain_rows)
            ranked = (self.ranks[plain_at], self.tie_sum[plain_at])
            verdicts = judge_windows(logs[plain], None, settings, ranked=ranked)
            fired[plain], split[plain], z[plain] = verdicts.fired, verdicts.split, verdicts.z
        if mixed.any():
            mix = np.flatnonzero(mixed)
            judged = judge_windows(logs[mix], codes[mix], settings)
            fired[mix], split[mix], z[mix] = judged.fired, judged.split, judged.z
            level = logs.copy()  # not a view of the table's logs
            level[mix] = judged.level
        hit = np.flatnonzero(fired)
        if not len(hit):
            return np.array([], dtype=np.int64)
        hit_rows = rows[hit]
        runs = np.count_nonzero(~np.isnan(logs[hit]), axis=1)
        start = self.count[hit_rows] - runs  # series position of each window's first run
        changes = make_changes(
            level=level[hit],
            split=split[hit],
            z=z[hit],
            first_index=start,
            run_id=self.run_id[hit_rows],
            commit=self.commit[hit_rows],
            started_at=self.started_at[hit_rows],
            settings=settings,
        )
        found.extend(zip(hit_rows.tolist(), changes, strict=True))
        after = split[hit] - (width - runs)  # runs before the step, in its window
        self.anchor[hit_rows] = start + after
        self._cut(hit_rows)
        again: np.ndarray = hit_rows[runs - after >= settings.min_runs]
        return again

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
