"""A node's wall budget and the time it has spent since the job started, setup included:
what the queue asks for work against (never a test predicted not to finish in time)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from laptime_ci.ci_env import job_wall_s

# Where a CI service tells its job timeout (seconds): GitLab's CI_JOB_TIMEOUT. GitHub Actions
# and CircleCI do not expose theirs: pass --laptime-budget or LAPTIME_BUDGET_S there.
CI_TIMEOUT_VARS = ("CI_JOB_TIMEOUT",)


@dataclass(frozen=True)
class JobClock:
    """Budget seconds (None: none) and the monotonic instant the job's wall counts from."""

    budget_s: float | None
    started: float  # time.monotonic() at the job's start (estimated from its wall so far)
    source: str  # where the start came from: "ci" (the job's own start) or "process"

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
        wall = job_wall_s(env)
        now = time.monotonic()
        if wall is not None:
            return cls(budget_s, now - wall, "ci")
        return cls(budget_s, now, "process")

    def elapsed_s(self) -> float:
        """Seconds since the job started."""
        return time.monotonic() - self.started

    def remaining_s(self, reserved_s: float = 0.0) -> float | None:
        """What is left of the budget after `reserved_s` more (None without a budget)."""
        if self.budget_s is None:
            return None
        return max(self.budget_s - self.elapsed_s() - reserved_s, 0.0)
