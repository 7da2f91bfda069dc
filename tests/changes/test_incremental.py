"""Incremental detection equals batch detection: the same runs give the same changes however
they arrive (one series a few runs at a time, or many series one run each in one table)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from analysis.changes import (
    DEFAULT_SETTINGS,
    Change,
    DetectionSettings,
    SeriesState,
    detect_changes,
    empty_state,
    series_points,
    update_state,
)
from analysis.changes.table import SeriesTable
from tests.changes.series import lognormal, series_frame


def history(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """A series with a few steps of random size and sign, sometimes a machine mix and ties."""
    values = lognormal(rng, n, rng.uniform(0.5, 30), rng.uniform(0.01, 0.3))
    for at in rng.choice(np.arange(10, n - 5), size=int(rng.integers(0, 5)), replace=False):
        values[at:] *= np.exp(rng.choice([-1, 1]) * rng.uniform(0.05, 1.0))
    machine = None
    if rng.random() < 0.4:
        machine = rng.choice(np.array(["linux", "macos", None], dtype=object), n)
        values = values * np.where(machine == "macos", 1.3, 1.0)
    if rng.random() < 0.2:
        values = np.round(values, 1)  # coarse timer: many ties
    return series_frame(values, machine=machine)


def in_chunks(
    frame: pd.DataFrame, rng: np.random.Generator, settings: DetectionSettings
) -> list[Change]:
    state = empty_state()
    found: list[Change] = []
    i = 0
    while i < len(frame):
        k = int(rng.integers(1, 40))
        state, changes = update_state(state, frame.iloc[i : i + k], settings)
        assert len(state.tail) <= settings.window
        assert state.count == min(i + k, len(frame))
        found += changes
        i += k
    return found


SETTINGS = (DEFAULT_SETTINGS, dataclasses.replace(DEFAULT_SETTINGS, window=30, min_z=3.0))


@pytest.mark.parametrize("settings", SETTINGS, ids=["default", "short-window"])
def test_update_state_in_random_chunks_equals_batch(settings: DetectionSettings) -> None:
    rng = np.random.default_rng(31)
    total = 0
    for _ in range(30):
        frame = history(rng, int(rng.integers(20, 400)))
        batch = list(detect_changes(frame, settings))
        assert in_chunks(frame, rng, settings) == batch
        total += len(batch)
    assert total >= 20  # the histories do hold changes to agree on


@pytest.mark.parametrize("settings", SETTINGS, ids=["default", "short-window"])
def test_a_table_of_many_series_one_run_each_equals_batch(settings: DetectionSettings) -> None:
    rng = np.random.default_rng(32)
    frames = [history(rng, int(rng.integers(30, 260))) for _ in range(24)]
    points = [series_points(f) for f in frames]
    table = SeriesTable(len(frames), settings)
    found: list[list[Change]] = [[] for _ in frames]
    longest = max(len(p) for p in points)
    for i in range(longest):
        if i == longest // 2:
            # The table's rows stored as states and read back, as a database would keep them.
            table = SeriesTable.from_states([table.state(r) for r in range(len(frames))], settings)
        rows = np.array([r for r, p in enumerate(points) if i < len(p)])
        pushed = table.push(
            rows,
            np.array([points[r].duration_s[i] for r in rows]),
            np.array([points[r].run_id[i] for r in rows]),
            np.array([points[r].commit[i] for r in rows], dtype=object),
            np.array([points[r].started_at[i] for r in rows]),
            np.array([points[r].machine[i] for r in rows], dtype=object),
        )
        for row, change in pushed:
            found[row].append(change)
    for frame, got in zip(frames, found, strict=True):
        assert got == list(detect_changes(frame, settings))
    assert sum(map(len, found)) >= 10


def test_a_state_keeps_a_bounded_tail_since_its_last_change() -> None:
    rng = np.random.default_rng(33)
    values = lognormal(rng, 600, 2.0, 0.02)
    values[500:] *= 1.5
    state, changes = update_state(empty_state(), series_frame(values))
    assert len(changes) == 1
    assert state.count == 600
    assert state.anchor == changes[0].index
    assert len(state.tail) == 600 - state.anchor <= DEFAULT_SETTINGS.window
    quiet, none = update_state(empty_state(), series_frame(values[:400]))
    assert none == ()
    assert len(quiet.tail) == DEFAULT_SETTINGS.window
    assert quiet.anchor == 0


def test_an_empty_update_changes_nothing() -> None:
    state = SeriesState(count=0, anchor=0, tail=empty_state().tail)
    assert update_state(state, series_frame(np.array([])))[0] is state


def test_a_table_takes_one_real_run_per_series_per_push() -> None:
    table = SeriesTable(3)
    when = np.array(["2026-01-01"] * 2, dtype="datetime64[ns]")
    commits = np.array(["a", "b"], dtype=object)
    with pytest.raises(ValueError, match="one run per series"):
        table.push(np.array([1, 1]), np.array([1.0, 2.0]), np.array([1, 2]), commits, when)
    with pytest.raises(ValueError, match="NaN"):
        table.push(np.array([0, 1]), np.array([1.0, np.nan]), np.array([1, 2]), commits, when)
