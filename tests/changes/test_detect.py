"""Lasting steps are found where they start; noise, single slow runs and bimodal timings are not."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from analysis.changes import DEFAULT_SETTINGS, DetectionSettings, changes_frame, detect_changes
from tests.changes.series import lognormal, series_frame, with_step


def test_a_lasting_step_is_found_with_its_sizes_and_commit_range() -> None:
    rng = np.random.default_rng(11)
    values = with_step(lognormal(rng, 100, 2.0, 0.03), 60, 1.3)
    frame = series_frame(values)
    (change,) = detect_changes(frame)
    assert abs(change.index - 60) <= 2
    # The commit range is the last run before the step and the first run after it.
    assert change.commit_before == frame["commit"][change.index - 1]
    assert change.commit_after == frame["commit"][change.index]
    assert change.run_id_after == frame["run_id"][change.index]
    assert change.at_after == frame["started_at"][change.index].to_pydatetime()
    assert change.median_before_s == pytest.approx(np.median(values[: change.index]), rel=0.02)
    assert change.median_after_s == pytest.approx(
        np.median(values[change.index :][: change.runs_after]), rel=0.02
    )
    assert change.relative == pytest.approx(0.3, abs=0.04)
    assert change.delta_s == pytest.approx(0.6, abs=0.08)
    assert change.slower
    assert change.z > DEFAULT_SETTINGS.min_z
    assert change.sigmas > 5  # a 30% step in 3% noise
    assert change.spread_before_s == pytest.approx(2.0 * 0.03, rel=0.4)
    assert change.index < change.confirmed_index < len(values)


def test_a_step_down_is_found_as_faster() -> None:
    rng = np.random.default_rng(12)
    (change,) = detect_changes(series_frame(with_step(lognormal(rng, 90, 40.0, 0.05), 45, 0.7)))
    assert abs(change.index - 45) <= 2
    assert not change.slower
    assert change.z < 0
    assert change.delta_s < 0


@pytest.mark.parametrize("seed", range(12))
def test_a_quiet_series_has_no_change(seed: int) -> None:
    rng = np.random.default_rng([13, seed])
    sigma = (0.01, 0.1, 0.3)[seed % 3]
    assert detect_changes(series_frame(lognormal(rng, 150, 3.0, sigma))) == ()


@pytest.mark.parametrize("where", [30, 70, 99])
def test_one_slow_run_is_not_a_change(where: int) -> None:
    rng = np.random.default_rng(14)
    values = lognormal(rng, 100, 1.5, 0.02)
    values[where] *= 10.0
    assert detect_changes(series_frame(values)) == ()


def test_a_few_slow_runs_in_a_row_are_not_a_change() -> None:
    rng = np.random.default_rng(15)
    values = lognormal(rng, 100, 1.5, 0.02)
    values[50:53] *= 3.0  # fewer than min_after runs: a bad afternoon, not a lasting step
    assert detect_changes(series_frame(values)) == ()


@pytest.mark.parametrize("seed", range(6))
def test_a_noisy_series_50_percent_swing_is_not_flagged(seed: int) -> None:
    rng = np.random.default_rng([16, seed])
    values = lognormal(rng, 120, 5.0, 0.45)  # runs routinely 50% off the median
    for start in (20, 45, 70, 100):
        values[start : start + 4] *= 1.5  # swings of a few runs, up and back
    assert detect_changes(series_frame(values)) == ()


@pytest.mark.parametrize("seed", range(6))
def test_a_5_percent_step_in_a_steady_series_is_found(seed: int) -> None:
    rng = np.random.default_rng([17, seed])
    at = int(rng.integers(30, 70))
    values = with_step(lognormal(rng, 110, 4.0, 0.01), at, 1.05)
    (change,) = detect_changes(series_frame(values))
    assert abs(change.index - at) <= 2
    assert change.relative == pytest.approx(0.05, abs=0.02)  # measured on its first runs after


def test_steps_of_3_noise_widths_are_placed_within_2_runs() -> None:
    rng = np.random.default_rng(18)
    placed = []
    for _ in range(40):
        sigma = rng.uniform(0.02, 0.3)
        at = int(rng.integers(20, 80))
        sign = rng.choice([-1.0, 1.0])
        values = with_step(
            lognormal(rng, 105, rng.uniform(1, 60), sigma), at, np.exp(sign * 3 * sigma)
        )
        found = [c.index for c in detect_changes(series_frame(values)) if abs(c.index - at) <= 5]
        placed.append(bool(found) and abs(found[0] - at) <= 2)
    assert sum(placed) >= 38, placed


def test_two_steps_are_two_changes_in_order() -> None:
    rng = np.random.default_rng(19)
    values = with_step(with_step(lognormal(rng, 150, 10.0, 0.05), 50, 1.4), 100, 0.6)
    changes = detect_changes(series_frame(values))
    assert [c.slower for c in changes] == [True, False]
    assert abs(changes[0].index - 50) <= 2
    assert abs(changes[1].index - 100) <= 2
    # The second change's "before" starts at the first change: its segments do not overlap.
    assert changes[1].runs_before <= changes[1].index - changes[0].index


@pytest.mark.parametrize("seed", range(8))
def test_a_bimodal_test_without_change_is_quiet(seed: int) -> None:
    # e.g. a cache hit or miss: 30% of runs take 2.5x as long, in no order.
    rng = np.random.default_rng([20, seed])
    slow = rng.random(150) < 0.3
    values = lognormal(rng, 150, 0.8, 0.04) * np.where(slow, 2.5, 1.0)
    assert detect_changes(series_frame(values)) == ()


def test_a_bimodal_test_whose_slow_mode_takes_over_is_a_change() -> None:
    rng = np.random.default_rng(21)
    share = np.where(np.arange(120) < 60, 0.1, 0.8)  # the miss became the rule at run 60
    values = lognormal(rng, 120, 0.8, 0.04) * np.where(rng.random(120) < share, 2.5, 1.0)
    changes = detect_changes(series_frame(values))
    assert len(changes) == 1
    assert changes[0].slower
    assert abs(changes[0].index - 60) <= 3


def test_a_machine_mix_is_not_a_change_and_a_step_on_it_is() -> None:
    rng = np.random.default_rng(22)
    machine = rng.choice(np.array(["linux", "macos"], dtype=object), 120)
    values = lognormal(rng, 120, 3.0, 0.03) * np.where(machine == "macos", 1.4, 1.0)
    # A cluster of runs on the slow machine is not a step in the test's own time.
    machine[30:45] = "macos"
    values[30:45] = lognormal(rng, 15, 3.0 * 1.4, 0.03)
    assert detect_changes(series_frame(values, machine=machine)) == ()
    stepped = with_step(values, 80, 1.15)
    (change,) = detect_changes(series_frame(stepped, machine=machine))
    assert abs(change.index - 80) <= 2
    assert change.relative == pytest.approx(0.15, abs=0.03)


def test_runs_on_a_busy_machine_are_normalised_by_their_cpu_share() -> None:
    rng = np.random.default_rng(23)
    cpu = lognormal(rng, 120, 2.0, 0.02)  # a CPU-bound test
    share = np.ones(120)
    share[40:70] = 0.5  # a month of runs on a shared, overloaded runner
    wall = cpu / share
    assert detect_changes(series_frame(wall)) != ()
    assert detect_changes(series_frame(wall, cpu_s=cpu, cpu_share=share)) == ()


def test_small_steps_below_the_floors_are_not_named() -> None:
    rng = np.random.default_rng(24)
    tiny = with_step(lognormal(rng, 100, 0.004, 0.01), 50, 2.0)  # 4 ms to 8 ms
    assert detect_changes(series_frame(tiny)) == ()
    loose = dataclasses.replace(DEFAULT_SETTINGS, min_abs_s=0.0)
    assert len(detect_changes(series_frame(tiny), loose)) == 1


def test_quantised_timings_with_ties_are_quiet_until_they_step() -> None:
    rng = np.random.default_rng(25)
    values = np.round(lognormal(rng, 120, 0.2, 0.03), 2)  # pytest --durations' 10 ms
    assert detect_changes(series_frame(values)) == ()
    (change,) = detect_changes(series_frame(np.round(with_step(values, 70, 1.5), 2)))
    assert abs(change.index - 70) <= 2


def test_changes_frame_carries_the_derived_sizes() -> None:
    rng = np.random.default_rng(26)
    changes = detect_changes(series_frame(with_step(lognormal(rng, 80, 2.0, 0.02), 40, 1.2)))
    frame = changes_frame(changes)
    assert list(frame["index"]) == [c.index for c in changes]
    assert frame["relative"].iloc[0] == pytest.approx(changes[0].relative)
    assert {"delta_s", "sigmas", "commit_before", "commit_after"} <= set(frame.columns)


def test_a_series_frame_without_its_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="lacks columns"):
        detect_changes(pd.DataFrame({"duration_s": [1.0, 2.0]}))


def test_settings_that_cannot_hold_a_change_are_refused() -> None:
    with pytest.raises(ValueError, match="window"):
        DetectionSettings(window=10, min_before=8, min_after=6)
