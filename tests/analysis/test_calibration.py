"""Calibration from measured vs predicted jobs: bounded medians, nothing below
MIN_SAMPLES, the expected error of the calibrated and of the raw predictions."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from analysis.accuracy.calibration import FACTOR_BOUNDS, MIN_SAMPLES, calibrate
from analysis.accuracy.plan_accuracy import JobSample, job_samples, plan_accuracy, shard_index
from analysis.accuracy.plan_record import PlanRecord, PredictedJob


def sample(setup: float, tests: float, measured_setup: float, measured_tests: float) -> JobSample:
    """A one-worker job predicted as setup + tests, measured as measured_setup + tests."""
    return JobSample(
        predicted_wall_s=setup + tests,
        predicted_setup_s=setup,
        predicted_tests_s=tests,
        measured_wall_s=measured_setup + measured_tests,
        measured_tests_s=measured_tests,
        workers=1,
    )


def test_factors_are_the_medians_of_measured_over_predicted() -> None:
    # The case: setup predicted 21.6 s, measured about 9 s; tests ran at 0.75x.
    samples = [
        sample(21.6, 100.0, 8.0, 75.0),
        sample(21.6, 80.0, 9.0, 60.0),
        sample(21.6, 60.0, 10.0, 45.0),
        sample(21.6, 40.0, 30.0, 30.0),  # one job on a busy machine: the median ignores it
        sample(21.6, 20.0, 9.5, 15.0),
    ]
    calibration = calibrate(samples)
    assert calibration.samples == 5
    assert calibration.setup_factor == pytest.approx(9.5 / 21.6)
    assert calibration.test_factor == pytest.approx(0.75)
    raw = sorted(abs(s.predicted_wall_s - s.measured_wall_s) / s.measured_wall_s for s in samples)
    assert calibration.raw_error == pytest.approx(raw[math.ceil(0.8 * 5) - 1])
    # Once calibrated, four of five jobs are within a few percent.
    assert calibration.expected_error is not None
    assert calibration.expected_error < 0.05 < calibration.raw_error
    assert calibration.note() == (
        f"expected within ±{calibration.expected_error:.0%} (from 5 measured jobs)"
    )


def test_below_the_minimum_nothing_is_learnt() -> None:
    samples = [sample(10.0, 10.0, 50.0, 50.0)] * (MIN_SAMPLES - 1)
    calibration = calibrate(samples)
    assert (calibration.setup_factor, calibration.test_factor) == (1.0, 1.0)
    assert calibration.expected_error is None
    assert calibration.raw_error is None
    assert calibration.samples == MIN_SAMPLES - 1
    assert "no expected error yet" in calibration.note()


def test_factors_are_bounded() -> None:
    calibration = calibrate([sample(1.0, 1.0, 100.0, 0.001)] * MIN_SAMPLES)
    assert calibration.setup_factor == FACTOR_BOUNDS[1]
    assert calibration.test_factor == FACTOR_BOUNDS[0]


def test_jobs_without_parts_count_for_the_error_not_the_factors() -> None:
    samples = [
        JobSample(100.0, None, 80.0, 110.0, None, 1),
        *[sample(20.0, 80.0, 10.0, 80.0)] * MIN_SAMPLES,
    ]
    calibration = calibrate(samples)
    assert calibration.samples == MIN_SAMPLES + 1
    assert calibration.setup_factor == pytest.approx(0.5)
    assert calibration.test_factor == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("label", "jobs", "expected"),
    [
        ("2/3", 3, 2),
        ("2", 3, 2),
        ("3/4", 3, None),
        ("0/3", 3, None),
        ("x/3", 3, None),
        ("", 3, None),
    ],
)
def test_the_shard_label_names_a_job_of_this_plan_only(
    label: str, jobs: int, expected: int | None
) -> None:
    assert shard_index({"shard": label}, jobs) == expected


def test_runs_match_by_shard_label_else_job_name_and_the_latest_rerun_counts() -> None:
    plan = PlanRecord(
        "abc",
        "split",
        "",
        (
            PredictedJob(1, "job 1", wall_s=100.0, tests_s=80.0, setup_s=20.0, cost=1.0),
            PredictedJob(2, "job 2", wall_s=50.0, tests_s=30.0, setup_s=20.0, cost=0.5),
        ),
    )
    t0 = pd.Timestamp("2026-12-01T10:00Z")
    t1 = t0 + pd.Timedelta("1min")
    runs = pd.DataFrame(
        [
            # job 1 ran twice in p1: the later run counts.
            (1, "abc", "p1", "c1", "ci", {"shard": "1/2"}, t0, 90.0, 70.0, 1, "m"),
            (2, "abc", "p1", "c1", "ci", {"shard": "1/2"}, t1, 110.0, 90.0, 1, "m"),
            (3, "abc", "p1", "c1", "job 2", {}, t0, 40.0, 25.0, 1, "m"),
            # no pipeline: grouped by commit
            (4, "abc", None, "c2", "job 2", {}, t0, 45.0, 30.0, 1, "m"),
        ],
        columns=[
            "run_id", "plan_id", "pipeline", "commit", "job", "labels", "started_at",
            "wall_s", "test_s", "xdist_workers", "machine",
        ],
    )  # fmt: skip
    [accuracy] = plan_accuracy([plan], runs, price_per_min={"m": 0.6})
    by_name = {p.pipeline: p for p in accuracy.pipelines}
    assert set(by_name) == {"p1", "commit c2"}
    p1 = by_name["p1"]
    assert [j.run_id for j in p1.jobs] == [2, 3]
    assert p1.complete
    assert p1.wait.measured == 110.0
    assert p1.machine.measured == 150.0
    assert p1.cost.measured == pytest.approx(150.0 / 60 * 0.6)
    assert p1.cost.predicted == pytest.approx(1.5)
    assert p1.jobs[0].wall.error_pct == pytest.approx(100 * (100 - 110) / 110)
    assert p1.jobs[1].setup.measured == pytest.approx(15.0)
    assert not by_name["commit c2"].complete
    assert len(job_samples([accuracy])) == 3
