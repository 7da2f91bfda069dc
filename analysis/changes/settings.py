"""What counts as a lasting change: the detector's thresholds, one frozen record."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DetectionSettings:
    """Thresholds of the windowed rank scan (docs/changes.md); the defaults are the measured ones.

    A step is named when, in the window since the last change (at most `window` runs), the best
    split has at least `min_before` runs before it and `min_after` after it, its rank statistic
    is at least `min_z`, and it moves the median by at least `min_sigmas` times the window's own
    noise, `min_relative` of the duration and `min_abs_s` seconds.
    """

    window: int = 120
    min_before: int = 8
    min_after: int = 6
    min_z: float = 4.0
    min_sigmas: float = 1.5
    min_relative: float = 0.02
    min_abs_s: float = 0.02
    # A series of identical timings has no spread; its noise is taken as at least this
    # (relative, i.e. in natural-log units), so one tick up is not infinitely many sigmas.
    min_noise: float = 0.005
    # Durations are floored here before taking logs: a 0 s result is below any timer.
    floor_s: float = 1e-4
    # A machine type needs this many runs in the window for its speed to be estimated.
    min_machine_runs: int = 3

    def __post_init__(self) -> None:
        if self.min_before < 2 or self.min_after < 2:
            raise ValueError("min_before and min_after must be at least 2")
        if self.window < self.min_before + self.min_after:
            raise ValueError("window must hold min_before + min_after runs")
        if self.min_z <= 0 or self.min_sigmas < 0 or self.min_noise <= 0 or self.floor_s <= 0:
            raise ValueError("thresholds must be positive")

    @property
    def min_runs(self) -> int:
        """The fewest runs since the last change that can hold a new one."""
        return self.min_before + self.min_after


DEFAULT_SETTINGS = DetectionSettings()
