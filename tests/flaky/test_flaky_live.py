"""A live history with flakes of known rate, uploaded through the real API: every flaky test
found, no stable one, cost equal to the recomputation; page, REST and CLI say the same."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine

from app.db.projects import get_project
from app.services.recommendations import project_prices
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.flaky.agree import assert_flaky_agrees, rest_flaky
from tests.flaky.injected import Injected, expected_per_test, injected_history
from tests.flaky.live import upload_history


@pytest.fixture(scope="module")
def history() -> Injected:
    # Recent days, so the default 30-day window and this week both hold some of it.
    start = datetime.now(UTC).date() - timedelta(days=4)
    return injected_history(seed=11, days=5, start=start)


@pytest.fixture(scope="module")
def stored(live_server: LiveServer, engine: Engine, history: Injected) -> ProjectFixture:
    project = make_project(engine)
    upload_history(live_server, project.upload_token, history)
    return project


def test_live_history_finds_every_injected_flake_and_prices_it(
    live_server: LiveServer, engine: Engine, stored: ProjectFixture, history: Injected
) -> None:
    answer = rest_flaky(live_server, stored, limit=1000)
    found: dict[str, dict[str, Any]] = {t["nodeid"]: t for t in answer["tests"]}
    assert set(found) == set(history.flaky_obs)
    assert answer["tests_total"] == len(history.flaky_obs)
    decided = history.results[history.results["outcome"] != "skipped"]
    for nodeid, observations in history.flaky_obs.items():
        assert found[nodeid]["flaky_runs"] == observations
        assert found[nodeid]["runs"] == int((decided["nodeid"] == nodeid).sum())
    with engine.begin() as conn:
        project = get_project(conn, stored.slug)
    assert project is not None
    prices = project_prices(project, history.runs) or {}
    assert prices, "the shipped catalogues price some of the synthetic machines"
    want = expected_per_test(history, prices)
    for nodeid, figures in want.items():
        cost = found[nodeid]["cost"]
        for name in ("machine_s", "wait_s", "rerun_s", "job_retry_s", "pipeline_rerun_s"):
            assert math.isclose(cost[name], figures.get(name, 0.0), abs_tol=1e-6), (nodeid, name)
        assert math.isclose(cost["usd"] or 0.0, figures.get("usd", 0.0), abs_tol=1e-9)
    assert math.isclose(
        answer["total"]["machine_s"], sum(f["machine_s"] for f in want.values()), rel_tol=1e-9
    )
    today = datetime.now(UTC).date()
    monday = (today - timedelta(days=today.weekday())).isoformat()
    weeks = {row["key"]: row for row in answer["by_week"]}
    assert answer["this_week"]["key"] == monday
    if monday in weeks:
        assert answer["this_week"] == weeks[monday]


def test_page_rest_and_cli_agree_on_flaky_numbers(
    live_server: LiveServer, database: Database, stored: ProjectFixture
) -> None:
    assert assert_flaky_agrees(live_server, database, stored) > 100
