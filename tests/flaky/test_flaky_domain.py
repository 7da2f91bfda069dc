"""Flaky tests found from a synthetic history with flakes of known rate injected, and their
cost equal to a recomputation from what was injected."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pandas as pd
import pytest

from analysis.flaky.report import FlakyReport, flaky_report
from tests.flaky.injected import RERUN, RETRY, Injected, expected_per_test, injected_history

PRICES = {"2xlarge+": 0.032, "large": 0.08}  # windows.xlarge and the GPU stay unpriced


@pytest.fixture(scope="module")
def injected() -> Injected:
    return injected_history()


@pytest.fixture(scope="module")
def report(injected: Injected) -> FlakyReport:
    return flaky_report(injected.results, injected.runs, prices=PRICES)


def test_every_injected_flake_is_found_and_no_stable_test_is_flagged(
    injected: Injected, report: FlakyReport
) -> None:
    found = {t.test.nodeid: t.test for t in report.tests}
    assert set(found) == set(injected.flaky_obs), "flagged exactly the injected flaky tests"
    assert injected.names["real_failure"] not in found
    assert injected.names["lonely"] not in found
    decided = injected.results[injected.results["outcome"] != "skipped"]
    for nodeid, observations in injected.flaky_obs.items():
        test = found[nodeid]
        runs = int((decided["nodeid"] == nodeid).sum())
        assert (test.flaky_runs, test.runs) == (observations, runs), nodeid
        assert test.rate == observations / runs
        assert sum(day.flaky for day in test.timeline) == observations
    # The injected rates come back within binomial noise over a few hundred runs.
    for role, rate in {**RERUN, **RETRY}.items():
        test = found[injected.names[role]]
        assert abs(test.rate - rate) < 4 * math.sqrt(rate * (1 - rate) / test.runs) + 0.01, role


def test_first_last_seen_branches_and_cells_come_from_the_flaky_results(
    injected: Injected, report: FlakyReport
) -> None:
    runs = injected.runs.set_index("run_id")
    rows = injected.results.merge(injected.runs[["run_id", "started_at", "branch", "job"]])
    for item in report.tests:
        test = item.test
        mine = rows[
            (rows["nodeid"] == test.nodeid) & (rows["flaky"] | (rows["outcome"] == "failed"))
        ]
        assert test.first_seen == mine["started_at"].min()
        assert test.last_seen == mine["started_at"].max()
        assert set(test.branches) == set(mine["branch"])
        assert {c.split("|")[0] for c in test.cells} == set(mine["job"])
    assert len(runs) == len(injected.runs)


def test_cost_equals_a_recomputation_from_the_injected_flakes(
    injected: Injected, report: FlakyReport
) -> None:
    want = expected_per_test(injected, PRICES)
    got = {t.test.nodeid: t.cost for t in report.tests}
    assert set(want) <= set(got)
    for nodeid, figures in want.items():
        cost = got[nodeid]
        for name in ("machine_s", "wait_s", "rerun_s", "job_retry_s", "pipeline_rerun_s"):
            assert math.isclose(getattr(cost, name), figures.get(name, 0.0), abs_tol=1e-6), (
                nodeid,
                name,
            )
        assert math.isclose(cost.usd or 0.0, figures.get("usd", 0.0), abs_tol=1e-9), nodeid
    # The twin flaked but cost nothing extra: it ran at the same time in the same pipeline.
    assert got[injected.names["twin_f"]].machine_s == 0.0
    # Per file, job, week and in total the same seconds, added up differently.
    total = sum(f["machine_s"] for f in want.values())
    assert math.isclose(report.total.machine_s, total, rel_tol=1e-12)
    for rows in (report.by_file, report.by_job, report.by_week):
        assert math.isclose(sum(r.machine_s for r in rows), total, rel_tol=1e-12)
    kinds = pd.Series([c.kind for c in injected.costs])
    assert report.total.reruns == int((kinds == "rerun").sum())
    assert report.total.job_retries == int((kinds == "job_retry").sum())
    assert report.total.pipeline_reruns == int((kinds == "pipeline_rerun").sum())
    assert report.total.unpriced_s > 0  # windows and GPU machines have no price here
    # Ranked by cost.
    machine = [t.cost.machine_s for t in report.tests]
    assert machine == sorted(machine, reverse=True)


def test_statistics_reset_from_a_date(injected: Injected, report: FlakyReport) -> None:
    middle = datetime(2026, 11, 8, tzinfo=UTC)
    target = report.tests[0].test.nodeid
    reset = flaky_report(injected.results, injected.runs, resets={target: middle}, prices=PRICES)
    after = {t.test.nodeid: t for t in reset.tests}
    if target in after:
        assert after[target].test.first_seen >= middle
        assert after[target].test.runs < report.tests[0].test.runs
    others = {t.test.nodeid: t.test.flaky_runs for t in report.tests if t.test.nodeid != target}
    assert {n: t.test.flaky_runs for n, t in after.items() if n != target} == others
    everything = flaky_report(
        injected.results, injected.runs, since=datetime(2030, 1, 1, tzinfo=UTC)
    )
    assert everything.tests == ()
    assert everything.total.machine_s == 0.0
