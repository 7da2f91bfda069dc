"""A node's wall budget and the time it has spent since the job started, setup included:
what the queue asks for work against (never a test predicted not to finish in time)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from laptime_ci.ci_env import job_wall_s

# Where a CI service tells its job timeout (seconds): GitLab's CI_JOB_TIMEOUT. GitHub Actions
# and CircleCI do not expose theirs: pass --laptime-budget or LAPTIME_BUDGET_S there.
CI_TIMEOUT_VARS = ("CI_JOB_TIMEOUT",)


# What a budget keeps for the session's close (fixtures torn down, the report written and sent,
# the interpreter's exit) unless LAPTIME_BUDGET_RESERVE_S says otherwise: DEFAULT_RESERVE_S,
# or RESERVE_SHARE of a long budget.
DEFAULT_RESERVE_S = 3.0
RESERVE_SHARE = 0.05
# Seconds of tests measured before their pace counts (one tiny test is timer noise).
MIN_PACED_S = 1.0


class Pace:
    """How much slower than predicted this node's tests ran: measured / predicted seconds of
    what it ran, once MIN_PACED_S were measured; never below 1 (a fast start promises
    nothing). A neighbour slowing the machine shows here, not in the plans' error."""

    def __init__(self) -> None:
        self.predicted_s = 0.0
        self.measured_s = 0.0

    def add(self, predicted_s: float | None, measured_s: float | None) -> None:
        """One test (or batch) run: what it was predicted to take and what it took."""
        if predicted_s is None or measured_s is None or predicted_s <= 0:
            return
        self.predicted_s += predicted_s
        self.measured_s += measured_s

    def factor(self) -> float:
        """The multiplier on predictions (1.0 until enough was measured)."""
        return max(1.0, self.ratio() or 1.0)

    def ratio(self) -> float | None:
        """Measured / predicted seconds, either way (None until MIN_PACED_S were measured or
        predicted): what the queue compares with the node's siblings."""
        if max(self.measured_s, self.predicted_s) < MIN_PACED_S or self.predicted_s <= 0:
            return None
        return self.measured_s / self.predicted_s


@dataclass(frozen=True)
class JobClock:
    """Budget seconds (None: none) and the monotonic instant the job's wall counts from; what
    it keeps for the close, and the pace its tests ran at."""

    budget_s: float | None
    started: float  # time.monotonic() at the job's start (estimated from its wall so far)
    source: str  # where the start came from: "ci" (the job's own start) or "process"
    reserve_s: float = 0.0
    pace: Pace = field(default_factory=Pace, compare=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str], budget_s: float | None) -> JobClock:
        """The budget: `budget_s`, else LAPTIME_BUDGET_S, else the CI's job timeout; the start:
        LAPTIME_JOB_STARTED_AT or the CI's job start, else this process's start."""
        if budget_s is None:
            for name in ("LAPTIME_BUDGET_S", *CI_TIMEOUT_VARS):
                try:
                    budget_s = float(env[name])
                    break
                except (KeyError, ValueError):
                    continue
        reserve_s = _reserve_s(env, budget_s)
        wall = job_wall_s(env)
        now = time.monotonic()
        if wall is not None:
            return cls(budget_s, now - wall, "ci", reserve_s)
        return cls(budget_s, now, "process", reserve_s)

    def elapsed_s(self) -> float:
        """Seconds since the job started."""
        return time.monotonic() - self.started

    def remaining_s(self, reserved_s: float = 0.0) -> float | None:
        """What is left of the budget, in predicted seconds (the wall left after the closing
        reserve, divided by the pace), after `reserved_s` more predicted seconds (None
        without a budget)."""
        if self.budget_s is None:
            return None
        wall_left = self.budget_s - self.elapsed_s() - self.reserve_s
        return max(wall_left / self.pace.factor() - reserved_s, 0.0)


def _reserve_s(env: Mapping[str, str], budget_s: float | None) -> float:
    """LAPTIME_BUDGET_RESERVE_S, else the default share of the budget (0 without one)."""
    if budget_s is None:
        return 0.0
    try:
        return max(float(env["LAPTIME_BUDGET_RESERVE_S"]), 0.0)
    except (KeyError, ValueError):
        return max(DEFAULT_RESERVE_S, RESERVE_SHARE * budget_s)
