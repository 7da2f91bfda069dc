"""Which runs a change's series reads every result of, within a bound: the nearest the step."""

from __future__ import annotations

import numpy as np

from analysis.changes.step_series import nearest_runs

IDS = np.arange(1, 11)  # runs 1..10; the step's first run after is 6


def _kept(tests: list[float], cap: int) -> list[int]:
    return IDS[nearest_runs(IDS, np.array(tests, dtype=float), 6, cap)].tolist()


def test_the_runs_nearest_the_step_first_alternating_sides() -> None:
    ten = [10.0] * 10
    assert _kept(ten, 1000) == IDS.tolist()  # all fit
    assert _kept(ten, 20) == [5, 6]
    assert _kept(ten, 30) == [5, 6, 7]  # the side after first at each distance
    assert _kept(ten, 45) == [4, 5, 6, 7]


def test_the_runs_at_the_step_are_kept_whatever_their_size() -> None:
    assert _kept([10.0] * 4 + [500.0, 500.0] + [10.0] * 4, 100) == [5, 6]
    # Unknown sizes count as none.
    assert _kept([np.nan] * 10, 0) == IDS.tolist()


def test_a_series_with_runs_on_one_side_only() -> None:
    ids = np.arange(1, 6)
    assert ids[nearest_runs(ids, np.full(5, 10.0), 1, 25)].tolist() == [1, 2]
    assert ids[nearest_runs(ids, np.full(5, 10.0), 99, 25)].tolist() == [4, 5]
