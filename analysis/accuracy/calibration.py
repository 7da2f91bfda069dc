"""Recalibrate the job model's setup and test-speed estimates from the jobs that ran its plans.

Each measured job splits into setup (wall - test seconds / workers) and tests. The factors are
medians of measured / predicted over the project's measured jobs (robust to one job that hit a
busy machine), bounded so that a few odd jobs cannot make the model absurd. Below
MIN_SAMPLES jobs nothing is learnt: factors 1.0, no expected error.

`expected_error` is a fraction (0.12 = within +-12%): the 80th percentile of the jobs'
absolute wall error once the factors are applied (`raw_error`: the same without them).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from analysis.accuracy.plan_accuracy import JobSample

# Fewest measured jobs before the model is corrected or an expected error is stated.
MIN_SAMPLES = 4
# How far a factor may move the model: the worst case was setup at 0.3x predicted.
FACTOR_BOUNDS = (0.25, 4.0)
# The share of measured jobs the stated expected error covers.
ERROR_QUANTILE = 0.8


@dataclass(frozen=True)
class Calibration:
    """Multipliers for the model's setup and test seconds, the error to expect once they
    apply, and how many measured jobs they come from."""

    setup_factor: float
    test_factor: float
    expected_error: float | None  # fraction, with the factors applied
    samples: int
    raw_error: float | None = None  # fraction, the predictions as they were made

    def note(self) -> str:
        """ "expected within ±12% (from 9 measured jobs)" for a recommendation (its factors
        applied), or why not."""
        error = self.expected_error
        if error is None:
            return (
                f"no expected error yet: {self.samples} of {MIN_SAMPLES} measured jobs "
                "(upload the planned jobs' reports with their plan id)"
            )
        return f"expected within ±{error:.0%} ({self.basis()})"

    def basis(self) -> str:
        """ "from 9 measured jobs" (or "0 of 4 measured jobs yet" below MIN_SAMPLES)."""
        if self.expected_error is None:
            return f"{self.samples} of {MIN_SAMPLES} measured jobs yet"
        jobs = "job" if self.samples == 1 else "jobs"
        return f"from {self.samples} measured {jobs}"


UNCALIBRATED = Calibration(1.0, 1.0, None, 0)


def _median(values: Sequence[float]) -> float | None:
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _factor(ratios: Sequence[float]) -> float:
    """The bounded median ratio, 1.0 with fewer than MIN_SAMPLES ratios."""
    if len(ratios) < MIN_SAMPLES:
        return 1.0
    median = _median(ratios)
    assert median is not None
    low, high = FACTOR_BOUNDS
    return min(max(median, low), high)


def quantile(values: Sequence[float], q: float) -> float:
    """Nearest-rank quantile: a value that was measured, never interpolated."""
    ordered = sorted(values)
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def _usable(sample: JobSample) -> bool:
    return (
        sample.measured_wall_s > 0
        and math.isfinite(sample.measured_wall_s)
        and math.isfinite(sample.predicted_wall_s)
    )


def calibrate(samples: Sequence[JobSample]) -> Calibration:
    """Setup and test factors (bounded medians of measured / predicted) and the expected
    error, from measured jobs; 1.0 and None below MIN_SAMPLES."""
    usable = [s for s in samples if _usable(s)]
    if len(usable) < MIN_SAMPLES:
        return Calibration(1.0, 1.0, None, len(usable))
    split = [
        s for s in usable if s.measured_tests_s is not None and s.predicted_setup_s is not None
    ]
    # Relative to the factors each plan already applied, so that a calibrated plan that came
    # true keeps its factors instead of swinging back to 1.0 (a fixed point, not a toggle).
    setup_ratios = [
        s.setup_factor
        * max(s.measured_wall_s - (s.measured_tests_s or 0.0) / s.workers, 0.0)
        / s.predicted_setup_s
        for s in split
        if s.predicted_setup_s
    ]
    test_ratios = [
        s.test_factor * (s.measured_tests_s or 0.0) / s.predicted_tests_s
        for s in split
        if s.predicted_tests_s > 0
    ]
    setup_factor = _factor(setup_ratios)
    test_factor = _factor(test_ratios)
    calibrated_errors = [
        abs(_calibrated_wall(s, setup_factor, test_factor) - s.measured_wall_s) / s.measured_wall_s
        for s in usable
    ]
    raw_errors = [abs(s.predicted_wall_s - s.measured_wall_s) / s.measured_wall_s for s in usable]
    return Calibration(
        setup_factor=setup_factor,
        test_factor=test_factor,
        expected_error=quantile(calibrated_errors, ERROR_QUANTILE),
        samples=len(usable),
        raw_error=quantile(raw_errors, ERROR_QUANTILE),
    )


def _calibrated_wall(sample: JobSample, setup_factor: float, test_factor: float) -> float:
    """The sample's predicted wall with the factors applied (unchanged without its parts)."""
    if sample.predicted_setup_s is None:
        return sample.predicted_wall_s
    tests_wall = sample.predicted_wall_s - sample.predicted_setup_s
    return (
        sample.predicted_setup_s * setup_factor / sample.setup_factor
        + tests_wall * test_factor / sample.test_factor
    )
