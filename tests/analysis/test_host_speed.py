"""Host speed in the stated error: a history whose runs went at different speeds (the same
tests slower in some runs) widens the error a plan states; a steady one does not."""

from __future__ import annotations

import pandas as pd
import pytest

from analysis.accuracy.calibration import UNCALIBRATED, Calibration
from analysis.accuracy.host_speed import host_speed, stated_error, stated_error_text
from tests.planner.history import results_for

# Ten tests of different lengths; each run multiplies them by its host's speed.
BASE = {f"t{i}.py::test": 0.2 + 0.1 * i for i in range(10)}


def history(*speeds: float) -> pd.DataFrame:
    """One run per speed; a test's duration is its base x the speed (x a small jitter)."""
    runs = []
    for run_id, speed in enumerate(speeds, start=1):
        jitter = {
            n: s * speed * (1 + 0.01 * ((i + run_id) % 3 - 1))
            for i, (n, s) in enumerate(BASE.items())
        }
        runs.append(results_for(run_id, jitter))
    return pd.concat(runs, ignore_index=True)


def test_noisy_hosts_widen_the_stated_error() -> None:
    steady = host_speed(history(1.0, 1.0, 1.0, 1.0, 1.0))
    noisy = host_speed(history(1.0, 1.3, 1.0, 1.35, 1.0, 1.3))
    assert steady is not None
    assert noisy is not None
    assert steady.spread < 0.02
    # Runs at 1.0 and 1.3x around a median of about 1.15x: each strays by about 13%.
    assert noisy.spread == pytest.approx(0.15, abs=0.03)
    # Before any measured job the spread is the stated error; after, a floor under it.
    assert stated_error(UNCALIBRATED, steady) < stated_error(UNCALIBRATED, noisy)
    measured = Calibration(1.0, 1.0, 0.05, 9)
    assert stated_error(measured, steady) == 0.05
    assert stated_error(measured, noisy) == noisy.spread
    assert stated_error_text(measured, noisy) == (
        f"expected within ±{noisy.spread:.0%} (from 9 measured jobs; "
        f"host speed ±{noisy.spread:.0%} over 6 history runs)"
    )
    assert "0 of 4 measured jobs yet" in stated_error_text(UNCALIBRATED, noisy)


def test_too_little_history_states_nothing_new() -> None:
    assert host_speed(history(1.0)) is None
    # Four runs, however different, are too few to state a spread from.
    assert host_speed(history(1.0, 1.3, 1.0, 1.35)) is None
    # Sub-10 ms tests are timer noise, not host speed.
    tiny = pd.concat([results_for(r, {"a.py::t": 0.001 * r}) for r in (1, 2, 3)])
    assert host_speed(tiny) is None
    assert stated_error(UNCALIBRATED, None) is None
    assert stated_error_text(UNCALIBRATED, None) == UNCALIBRATED.note()
