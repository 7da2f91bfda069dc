"""The ranks a SeriesTable keeps between pushes are the ranks a sort would give, and a table
rebuilt from stored arrays and replayed pushes judges as the live one did: the speedups of the
incremental path change no answer."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from analysis.changes import DEFAULT_SETTINGS, Change, DetectionSettings
from analysis.changes.table import SeriesTable
from analysis.changes.windows import midranks

SHORT = dataclasses.replace(DEFAULT_SETTINGS, window=30, min_z=3.0)


def _values(rng: np.random.Generator, series: int, runs: int) -> np.ndarray:
    """(series, runs) durations: steps up and down, coarse timers (ties), zeros (the floor)."""
    level = np.exp(rng.normal(0.0, 1.5, series))[:, None]
    noise = np.exp(rng.normal(0.0, rng.uniform(0.01, 0.2, series)[:, None], (series, runs)))
    values = level * noise
    for row in rng.choice(series, series // 2, replace=False):
        at = int(rng.integers(10, runs - 5))
        values[row, at:] *= rng.choice([0.5, 1.3, 2.0])
    coarse = rng.random(series) < 0.4
    values[coarse] = np.round(values[coarse], 1)  # many equal timings, some of them 0.0
    return values


def _push(table: SeriesTable, values: np.ndarray, i: int, rows: np.ndarray) -> list:
    n = len(rows)
    return table.push(
        rows,
        values[rows, i],
        np.full(n, 1000 + i),
        np.full(n, f"c{i}", dtype=object),
        np.full(n, np.datetime64("2026-01-01", "ns") + np.timedelta64(i, "h")),
    )


@pytest.mark.parametrize("settings", [DEFAULT_SETTINGS, SHORT], ids=["default", "short"])
def test_kept_ranks_equal_a_sort_after_every_push(settings: DetectionSettings) -> None:
    rng = np.random.default_rng(5)
    values = _values(rng, 300, 260)
    table = SeriesTable(len(values), settings)
    checked = changes = 0
    for i in range(values.shape[1]):
        rows = np.flatnonzero(rng.random(len(values)) < 0.8)  # some series skip a run
        changes += len(_push(table, values, i, rows))
        ranked = np.flatnonzero(table.ranked)
        logs = table.logs[ranked]
        want_ranks, want_ties = midranks(logs, ~np.isnan(logs))
        assert np.array_equal(table.ranks[ranked], want_ranks)
        assert np.array_equal(table.tie_sum[ranked], want_ties)
        checked += len(ranked)
    assert checked > 10_000
    assert changes > 50  # rows were cut and ranked afresh along the way
    assert (table.tie_sum > 0).any()


def test_a_restored_and_replayed_table_judges_as_the_live_one() -> None:
    rng = np.random.default_rng(6)
    values = _values(rng, 200, 240)
    live = SeriesTable(len(values))
    found: list[tuple[int, Change]] = []
    log: list[tuple[np.ndarray, int, np.ndarray, np.ndarray]] = []
    for i in range(200):
        rows = np.flatnonzero(rng.random(len(values)) < 0.9)
        anchors = live.anchor[rows].copy()
        found += _push(live, values, i, rows)
        moved = rows[live.anchor[rows] != anchors]
        log.append((rows, i, moved, live.anchor[moved].copy()))
    # Stored at run 150 and replayed from there, as a worker without the cell in memory does.
    stored = SeriesTable(len(values))
    for rows, i, _moved, _to in log[:150]:
        _push(stored, values, i, rows)
    cold = SeriesTable.restore(
        stored.count.copy(), stored.anchor.copy(), stored.duration_s.copy(),
        stored.run_id.copy(),
    )  # fmt: skip
    for rows, i, moved, moved_to in log[150:]:
        cold.replay(rows, values[rows, i], 1000 + i, moved, moved_to)
    assert np.array_equal(cold.count, live.count)
    assert np.array_equal(cold.anchor, live.anchor)
    assert np.array_equal(cold.duration_s, live.duration_s, equal_nan=True)
    cold = cold.grown(3)
    later_live: list[int] = []
    later_cold: list[int] = []
    for i in range(200, 240):
        rows = np.arange(len(values))
        later_live += [(r, c.index, c.run_id_after) for r, c in _push(live, values, i, rows)]
        later_cold += [(r, c.index, c.run_id_after) for r, c in _push(cold, values, i, rows)]
    assert later_cold == later_live
    assert len(later_live) >= 5
    assert found
