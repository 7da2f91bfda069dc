"""What a split-plan question may ask, and its bounds: the job range cap and the time limits.

The API, the pages and the CLI all build SplitOptions, so a request beyond a bound is refused
the same way everywhere (ValueError, turned into a 422 or a usage error at the edge).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal, get_args

from analysis.ci.pytest_selection import Invocation
from analysis.durations import parse_duration_s
from analysis.errors import AnswerError
from analysis.estimate import DEFAULT_WINDOW_RUNS

Granularity = Literal["file", "marker", "test", "auto"]
Objective = Literal["wait", "machine", "cost"]
GRANULARITIES: tuple[str, ...] = get_args(Granularity)
OBJECTIVES: tuple[str, ...] = get_args(Objective)

# Most jobs a plan may propose. Planning costs grow with the square of the job count (each
# count is planned, each with its jobs); 64 parallel jobs for one matrix cell is already past
# what CI providers run at once for a project. Documented in docs/planner.md.
MAX_JOBS = 64
# Longest per-job overhead, budget or wait target: a week (no CI job runs longer).
MAX_PLAN_DURATION_S = 7 * 86400.0
# Most recent results per test an estimate takes the median over.
MAX_WINDOW_RUNS = 1000
_JOB_RANGE_RE = re.compile(r"\s*(\d{1,6})\s*(?:-\s*(\d{1,6})\s*)?")


def parse_job_range(text: str) -> tuple[int, int]:
    """`4` -> (4, 4); `2-6` -> (2, 6); ValueError unless 1 <= min <= max <= MAX_JOBS."""
    match = _JOB_RANGE_RE.fullmatch(text)
    if not match:
        raise AnswerError(f"{text[:40]!r} is not a job count like 4 or a range like 2-6")
    lo = int(match.group(1))
    hi = int(match.group(2)) if match.group(2) else lo
    check_job_range(lo, hi)
    return lo, hi


def check_job_range(lo: int, hi: int) -> None:
    """ValueError unless 1 <= lo <= hi <= MAX_JOBS."""
    if lo < 1 or hi < lo:
        raise AnswerError(f"job range must be 1 <= min <= max, got {lo}-{hi}")
    if hi > MAX_JOBS:
        raise AnswerError(f"job range {lo}-{hi} is over the limit: at most {MAX_JOBS} jobs")


def parse_plan_duration_s(text: str | None) -> float | None:
    """A per-job overhead, budget or wait target (`5m`, `1h30m`); None when empty."""
    if text is None or not text.strip():
        return None
    return parse_duration_s(text, max_s=MAX_PLAN_DURATION_S)


# A calibration factor beyond this says the model is broken, not that the machine is slow.
MAX_MODEL_FACTOR = 100.0


@dataclass(frozen=True)
class SplitOptions:
    """What the caller asks for. `jobs` is an inclusive (min, max) range of job counts."""

    jobs: tuple[int, int] = (2, 2)
    granularity: Granularity = "auto"
    overhead_s: float | None = None  # per-job setup; None = measured from the runs
    budget_s: float | None = None  # per-job wall limit (a CI timeout), overhead included
    objective: Objective = "wait"
    wait_target_s: float | None = None  # for objective "machine"; None = today's wait
    window_runs: int = DEFAULT_WINDOW_RUNS
    marker: str = "slow"
    # Splitting is worth it when it saves at least this fraction of the wait...
    min_gain_frac: float = 0.10
    # ...and costs at most this many extra machine seconds per second of wait saved.
    max_machine_per_wait: float = 1.0
    # The test runner the jobs run: commands and CI snippets are written in its terms.
    runner: str = "pytest"
    # Calibration multipliers of the job model (analysis/split/job_model.py): the setup parts
    # (CI setup, startup, collection, first use) and the test part. 1.0 = as measured.
    setup_factor: float = 1.0
    test_factor: float = 1.0
    # How the history's pytest was invoked: pytest jobs replay its nodeids that way.
    invocation: Invocation = field(default_factory=Invocation)

    def __post_init__(self) -> None:
        check_job_range(*self.jobs)
        if self.runner != "pytest" and self.granularity == "marker":
            raise AnswerError("granularity 'marker' writes pytest markers: pytest only")
        if self.granularity not in GRANULARITIES:
            raise AnswerError(f"granularity must be one of {', '.join(GRANULARITIES)}")
        if self.objective not in OBJECTIVES:
            raise AnswerError(f"objective must be one of {', '.join(OBJECTIVES)}")
        for name in ("overhead_s", "budget_s", "wait_target_s"):
            value = getattr(self, name)
            if value is not None and (
                not math.isfinite(value) or not 0 <= value <= MAX_PLAN_DURATION_S
            ):
                raise AnswerError(f"{name} must be between 0 and {MAX_PLAN_DURATION_S:.0f} seconds")
        for name in ("setup_factor", "test_factor"):
            value = getattr(self, name)
            if not math.isfinite(value) or not 0 < value <= MAX_MODEL_FACTOR:
                raise AnswerError(f"{name} must be above 0 and at most {MAX_MODEL_FACTOR:g}")
        if not 1 <= self.window_runs <= MAX_WINDOW_RUNS:
            raise AnswerError(f"window_runs must be between 1 and {MAX_WINDOW_RUNS}")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,99}", self.marker):
            raise AnswerError(f"marker {self.marker[:40]!r} is not a valid Python identifier")
