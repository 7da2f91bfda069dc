"""Pure comparison of one pipeline's results with its base branch's runs of the same cell.

A test is slower (faster) when its time here is beyond its own base noise:
|here - base median| > max(K * 1.4826 * MAD, FLOOR_S, FLOOR_SHARE * base median).
The MAD (scaled to a normal sigma) ignores one odd base run, which a standard deviation
would not; the floors keep tests of steady milliseconds from flagging on timer jitter.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

# How many noise widths a test must move to be named.
K = 3.0
# Below these a move is timer jitter, whatever the series' spread.
FLOOR_S = 0.05
FLOOR_SHARE = 0.10
# MAD to a normal sigma.
MAD_SIGMA = 1.4826
FAILING = ("failed", "error")


@dataclass(frozen=True)
class Measure:
    """One number here against the base's median and spread (MAD-sigma)."""

    here: float
    base_median: float
    base_spread: float

    @property
    def delta(self) -> float:
        """Here minus the base median."""
        return self.here - self.base_median


@dataclass(frozen=True)
class TestMove:
    """A test whose time moved beyond its base noise (or is new)."""

    nodeid: str
    here_s: float
    base_median_s: float | None
    threshold_s: float | None


@dataclass(frozen=True)
class Comparison:
    """The comparison answer, before pricing and wire shape."""

    base_runs: int
    wall: Measure
    test_time: Measure
    slower: tuple[TestMove, ...]
    faster: tuple[TestMove, ...]
    new_tests: tuple[TestMove, ...]
    removed_tests: tuple[str, ...]
    new_failures: tuple[str, ...]
    flaky: tuple[str, ...]
    # Flaky in this pipeline (a retry passed, or its runs disagreed) but not in the base runs.
    new_flaky: tuple[str, ...] = ()
    # Failures of quarantined tests: reported, not failing the job, not new failures.
    quarantined_failures: tuple[str, ...] = ()


def spread(values: pd.Series) -> float:
    """MAD scaled to a normal sigma (0 for fewer than two values)."""
    if len(values) < 2:
        return 0.0
    return float(MAD_SIGMA * (values - values.median()).abs().median())


def threshold(median: float, spread: float) -> float:
    """How far a test must move from its base median to be named."""
    return max(K * spread, FLOOR_S, FLOOR_SHARE * median)


def compare_runs(
    head_runs: pd.DataFrame,
    head_results: pd.DataFrame,
    base_runs: pd.DataFrame,
    base_results: pd.DataFrame,
    quarantined: frozenset[str] = frozenset(),
) -> Comparison:
    """Compare. Runs: run_id, wall_s. Results: run_id, nodeid, outcome, duration_s, flaky.

    Several head runs (shards of one pipeline) add up: wall is the longest, test time the sum;
    a base run's numbers are per run. A failure of a `quarantined` test is listed apart.
    """
    head_wall = float(head_runs["wall_s"].max())
    head_tests = float(head_results["duration_s"].sum())
    base_wall = base_runs["wall_s"].astype(float)
    base_time = (
        base_results.groupby("run_id")["duration_s"].sum().reindex(base_runs["run_id"]).fillna(0.0)
    )
    wall = Measure(head_wall, float(base_wall.median()), spread(base_wall))
    test_time = Measure(head_tests, float(base_time.median()), spread(base_time))

    here = head_results.groupby("nodeid")["duration_s"].sum()
    base_by_test = base_results.groupby("nodeid")["duration_s"]
    medians = base_by_test.median()
    spreads = base_by_test.apply(spread)
    slower: list[TestMove] = []
    faster: list[TestMove] = []
    new: list[TestMove] = []
    for nodeid, seconds in here.items():
        name = str(nodeid)
        if name not in medians.index:
            new.append(TestMove(name, float(seconds), None, None))
            continue
        median = float(medians[name])
        limit = threshold(median, float(spreads[name]))
        move = TestMove(name, float(seconds), median, limit)
        if seconds - median > limit:
            slower.append(move)
        elif median - seconds > limit:
            faster.append(move)
    removed = sorted(set(medians.index.astype(str)) - set(here.index.astype(str)))

    failing_here = set(head_results.loc[head_results["outcome"].isin(FAILING), "nodeid"])
    base_outcomes = base_results.groupby("nodeid")["outcome"]
    base_failed = set(base_results.loc[base_results["outcome"].isin(FAILING), "nodeid"])
    mixed = {
        str(n) for n, o in base_outcomes if o.isin(FAILING).any() and not o.isin(FAILING).all()
    }
    retried = set(base_results.loc[base_results["flaky"].astype(bool), "nodeid"]) | set(
        head_results.loc[head_results["flaky"].astype(bool), "nodeid"]
    )
    flaky = {str(n) for n in mixed | retried}
    head_outcomes = head_results.groupby("nodeid")["outcome"]
    head_mixed = {
        str(n) for n, o in head_outcomes if o.isin(FAILING).any() and (o == "passed").any()
    }
    head_retried = set(head_results.loc[head_results["flaky"].astype(bool), "nodeid"])
    base_retried = set(base_results.loc[base_results["flaky"].astype(bool), "nodeid"])
    base_flaky = {str(n) for n in mixed | base_retried}
    new_flaky = sorted({str(n) for n in head_mixed | head_retried} - base_flaky)
    held = sorted(str(n) for n in failing_here if str(n) in quarantined)
    new_failures = sorted(
        str(n) for n in failing_here - base_failed - flaky if str(n) not in quarantined
    )
    return Comparison(
        base_runs=len(base_runs),
        wall=wall,
        test_time=test_time,
        slower=tuple(sorted(slower, key=lambda m: m.base_median_s - m.here_s)),  # type: ignore[operator]
        faster=tuple(sorted(faster, key=lambda m: m.here_s - m.base_median_s)),  # type: ignore[operator]
        new_tests=tuple(sorted(new, key=lambda m: -m.here_s)),
        removed_tests=tuple(removed),
        new_failures=tuple(new_failures),
        flaky=tuple(sorted(flaky)),
        new_flaky=tuple(new_flaky),
        quarantined_failures=tuple(held),
    )
