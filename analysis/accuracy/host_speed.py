"""How much the host's speed moves a job's wall, from the history: an error no plan removes.

The same jobs took 11.6-13.9 s in some passes and 13-19 s in others, with CPU time rising with
the wall and no run-queue wait: the machine itself was slower for a while. Per run, its speed
factor is the median over its tests of (the test's duration / the test's median over runs), so
1.0 is a typical run and 1.2 one whose tests took 20% longer; only tests that ran in at least
two runs and took at least MIN_TEST_S (shorter ones are timer noise) count, and a run needs
MIN_SHARED_TESTS of them. The spread is the ERROR_QUANTILE of |factor - 1| over the runs
(nearest rank), the same quantile the measured jobs' error is stated at, and only once
MIN_SPREAD_RUNS runs are comparable: two runs agreeing say nothing of a third (a plan stated
"within ±0%" from two identical runs would promise what nobody measured).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from analysis.accuracy.calibration import ERROR_QUANTILE, Calibration, quantile
from analysis.estimate import result_durations

MIN_TEST_S = 0.01
MIN_SHARED_TESTS = 5
MIN_RUNS = 2
MIN_SPREAD_RUNS = 5


@dataclass(frozen=True)
class HostSpeed:
    """The history runs' speed factors and their spread (a fraction: 0.09 = +-9%)."""

    spread: float
    runs: int


def host_speed(results: pd.DataFrame) -> HostSpeed | None:
    """The spread of the runs' speed factors (module doc); None below MIN_SPREAD_RUNS
    comparable runs."""
    frame = pd.DataFrame(
        {
            "run_id": results["run_id"].to_numpy(),
            "nodeid": results["nodeid"].astype(str).to_numpy(),
            "s": result_durations(results).to_numpy(),
        }
    )
    frame = frame[frame["s"] >= MIN_TEST_S]
    # A test reported twice in a run (reruns, xdist duplicates) counts once, at its median.
    once = frame.groupby(["run_id", "nodeid"])["s"].median().reset_index()
    once = once[once.groupby("nodeid")["run_id"].transform("size") >= MIN_RUNS]
    typical = once.groupby("nodeid")["s"].transform("median")
    ratio = (once["s"] / typical).groupby(once["run_id"])
    factors = ratio.median()[ratio.size() >= MIN_SHARED_TESTS]
    if len(factors) < MIN_SPREAD_RUNS:
        return None
    deviations = (factors - 1.0).abs().tolist()
    return HostSpeed(spread=quantile(deviations, ERROR_QUANTILE), runs=len(factors))


def stated_error(calibration: Calibration, host: HostSpeed | None) -> float | None:
    """The error a plan states: the measured jobs' (factors applied), never below the host
    speed spread of the history; the spread alone before any job was measured."""
    errors = [calibration.expected_error, None if host is None else host.spread]
    known = [e for e in errors if e is not None]
    return max(known) if known else None


def stated_error_text(calibration: Calibration, host: HostSpeed | None) -> str:
    """ "expected within ±12% (from 9 measured jobs; host speed ±5% over 20 history runs)"."""
    error = stated_error(calibration, host)
    if error is None or host is None:
        return calibration.note()
    return (
        f"expected within ±{error:.0%} ({calibration.basis()}; "
        f"host speed ±{host.spread:.0%} over {host.runs} history runs)"
    )
