"""The flaky answer: every flaky test with its cost, ranked, and the cost per file, job, week."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import pandas as pd

from analysis.flaky.cost import CostRow, cost_by, cost_items, cost_row
from analysis.flaky.detect import FlakyTest, flaky_observations, flaky_tests, joined_results


@dataclass(frozen=True)
class FlakyTestCost:
    """A flaky test and what it cost."""

    test: FlakyTest
    cost: CostRow


@dataclass(frozen=True)
class FlakyReport:
    """Flaky tests most costly first, the cost per file, job and week, and the total."""

    tests: tuple[FlakyTestCost, ...]
    by_file: tuple[CostRow, ...]
    by_job: tuple[CostRow, ...]
    by_week: tuple[CostRow, ...]
    total: CostRow
    results: int  # results read (after the since/reset cut)


def empty_cost(key: str) -> CostRow:
    """A cost row of nothing spent."""
    return CostRow(key, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, None, 0.0)


def flaky_report(
    results: pd.DataFrame,
    runs: pd.DataFrame,
    *,
    since: datetime | None = None,
    resets: Mapping[str, datetime] | None = None,
    prices: Mapping[str, float] | None = None,
) -> FlakyReport:
    """Find the flaky tests of a history and price them. Results: run_id, nodeid, file,
    outcome, duration_s, attempts, flaky (last_attempt_s when known); runs: RUN_COLUMNS."""
    observed = flaky_observations(joined_results(results, runs, since=since, resets=resets))
    found = flaky_tests(observed)
    items = cost_items(observed, set(found), prices)
    per_test = {row.key: row for row in cost_by(items, "nodeid")}
    ranked = sorted(
        (
            FlakyTestCost(test, per_test.get(nodeid, empty_cost(nodeid)))
            for nodeid, test in found.items()
        ),
        key=lambda t: (-t.cost.machine_s, -t.test.flaky_runs, t.test.nodeid),
    )
    weeks = sorted(cost_by(items, "week"), key=lambda r: r.key)
    return FlakyReport(
        tests=tuple(ranked),
        by_file=tuple(cost_by(items, "file")),
        by_job=tuple(cost_by(items, "job")),
        by_week=tuple(weeks),
        total=cost_row("total", items) if len(items) else empty_cost("total"),
        results=len(observed),
    )
