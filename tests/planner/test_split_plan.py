"""plan_splits on five-row histories whose numbers are checked by hand."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd
import pytest
import yaml

from analysis.split.options import MAX_JOBS, parse_job_range
from analysis.split.plan import SplitOptions, parse_duration_s, plan_splits
from app.schemas import split as answers
from tests.planner.history import one_job, results_for, run_row, runs_frame

# a.py 600 s (two tests), b.py 400 s, c.py 200 s: 1200 s of tests; setup 100 s.
TESTS = {"a.py::t1": 300.0, "a.py::t2": 300.0, "b.py::t": 400.0, "c.py::t": 200.0}


def plan(workers: int = 1, price_per_min: dict[str, float] | None = None, **kwargs: Any):
    results, runs = one_job(TESTS, overhead_s=100.0, workers=workers)
    return plan_splits(results, runs, SplitOptions(**kwargs), price_per_min=price_per_min)


def test_file_split_numbers() -> None:
    p = plan(jobs=(2, 2), granularity="file")
    assert (p.before.wait_s, p.before.machine_s) == (1300.0, 1300.0)
    # {a.py} vs {b.py, c.py}: 600 s each, plus 100 s setup per job.
    assert sorted(job.members for job in p.jobs) == [("a.py",), ("b.py", "c.py")]
    assert (p.after.wait_s, p.after.machine_s) == (700.0, 1400.0)
    assert p.verdict == "split"
    assert p.config["files"] == [list(job.members) for job in p.jobs]
    # The job with the most members runs everything else, so new files still run.
    home = next(job for job in p.jobs if job.members == ("b.py", "c.py"))
    assert home.pytest_args == ("--ignore", "a.py")
    assert p.config["test_durations"] == TESTS


def test_budget_counts_setup_and_refuses() -> None:
    # Tests alone (600 s) would fit 650 s; with the 100 s setup no job does.
    p = plan(jobs=(2, 2), granularity="file", budget_s=650.0)
    assert p.verdict == "refused"
    assert "budget" in p.reason
    assert "11 min 40 s" in p.reason  # the 700 s job, setup included
    assert p.after == p.before
    assert not any(row.feasible for row in p.pareto if row.jobs == 2)


def test_budget_splits_further_with_auto() -> None:
    # Auto splits a.py (600 s > 650 - 100 s of room); 3 jobs: {b} 400, {a1, c} 500, {a2} 300.
    p = plan(jobs=(2, 3), granularity="auto", budget_s=650.0)
    assert p.verdict == "split"
    assert p.after.jobs == 3
    assert p.after.wait_s == 600.0
    assert p.after.machine_s == 1500.0
    assert all(job.wall_s <= 650.0 for job in p.jobs)
    members = sorted(m for job in p.jobs for m in job.members)
    assert members == ["a.py::t1", "a.py::t2", "b.py", "c.py"]


def test_overhead_option_overrides_the_measurement() -> None:
    p = plan(jobs=(2, 2), granularity="file", overhead_s=0.0)
    assert (p.before.wait_s, p.after.wait_s, p.after.machine_s) == (1200.0, 600.0, 1200.0)


def test_xdist_workers_divide_test_time() -> None:
    # Wall 100 + 1200 / 2 = 700 s: the measured setup is still 100 s.
    p = plan(jobs=(2, 2), granularity="file", workers=2)
    assert p.before.wait_s == 700.0
    assert p.after.wait_s == 100.0 + 600.0 / 2
    assert p.jobs[0].workers == 2


def test_cost_needs_a_price_and_is_never_invented() -> None:
    p = plan(jobs=(2, 2), granularity="file")
    assert p.before.cost is None
    assert p.before.cost is None
    priced = plan(jobs=(2, 2), granularity="file", price_per_min={"linux": 0.6})
    assert priced.before.cost == pytest.approx(13.0)  # 1300 s at 0.01 per second
    assert priced.after.cost == pytest.approx(14.0)
    assert priced.jobs[0].cost == pytest.approx(7.0)
    with pytest.raises(ValueError, match="price"):
        plan(jobs=(2, 2), objective="cost")
    cheapest = plan(jobs=(1, 3), objective="cost", granularity="file", price_per_min={"linux": 0.6})
    assert cheapest.verdict == "keep"  # one job is cheapest: every extra job pays setup


def test_machine_objective_takes_least_machine_within_the_target() -> None:
    p = plan(jobs=(1, 3), granularity="file", objective="machine", wait_target_s=800.0)
    # 1 job: 1300 s (misses); 2 jobs: 700 s / 1400 s; 3 jobs: 700 s / 1500 s.
    assert p.verdict == "split"
    assert (p.after.jobs, p.after.wait_s, p.after.machine_s) == (2, 700.0, 1400.0)
    missed = plan(jobs=(1, 3), granularity="file", objective="machine", wait_target_s=500.0)
    assert missed.verdict == "refused"


def test_small_gain_is_not_worth_it() -> None:
    results, runs = one_job({"a.py::big": 1000.0, "b.py::small": 50.0}, overhead_s=100.0)
    p = plan_splits(results, runs, SplitOptions(jobs=(2, 2)))
    # 1150 s -> 1100 s (4%) for 100 s more machine time.
    assert p.verdict == "not_worth_it"
    assert "saves only" in p.reason
    assert p.after == p.before


def test_balanced_layout_is_kept() -> None:
    results = pd.concat(
        [results_for(1, {"a.py::t": 600.0}), results_for(2, {"b.py::t": 600.0})],
        ignore_index=True,
    )
    runs = runs_frame([run_row(1, job="j1", wall_s=700.0), run_row(2, job="j2", wall_s=700.0)])
    p = plan_splits(results, runs, SplitOptions(jobs=(2, 2)))
    assert p.before.jobs == 2
    assert p.before.wait_s == 700.0
    assert p.verdict == "keep"


def test_marker_split_snippets() -> None:
    p = plan(jobs=(2, 2), granularity="marker")
    assert p.config["markers"] == {"a.py": "pytestmark = pytest.mark.slow"}
    by_members = {job.members: job for job in p.jobs}
    assert by_members[("a.py",)].pytest_args == ("-m", "slow")
    assert by_members[("b.py", "c.py")].pytest_args == ("-m", "not slow")
    workflow = yaml.safe_load(p.config["github_actions"])
    entries = workflow["jobs"]["test"]["strategy"]["matrix"]["include"]
    assert sorted(e["pytest-args"] for e in entries) == ["-m 'not slow'", "-m slow"]


def test_three_job_marker_names() -> None:
    p = plan(jobs=(3, 3), granularity="marker")
    assert sorted(p.config["marker_expressions"]) == ["not (slow1 or slow2)", "slow1", "slow2"]


def test_answer_form_is_json() -> None:
    d = json.loads(answers.SplitPlan.of(plan(jobs=(2, 4))).model_dump_json(exclude_unset=True))
    for key in ("verdict", "reason", "jobs", "before", "after", "pareto", "config"):
        assert key in d
    assert {"members", "predicted_wall_s"} <= set(d["jobs"][0])
    assert {"wait_s", "machine_s"} <= set(d["before"]) & set(d["after"])
    assert [row["jobs"] for row in d["pareto"]] == [1, 2, 3, 4]
    assert sum(row["chosen"] for row in d["pareto"]) == 1


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("300", 300.0), ("90s", 90.0), ("5m", 300.0), ("1h30m", 5400.0), ("1.5h", 5400.0),
     ("2m30s", 150.0), (" 1h 5s ", 3605.0)],
)  # fmt: skip
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration_s(text) == seconds


@pytest.mark.parametrize("text", ["", "5x", "m5", "30m1h", "5m5m", "-5m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration_s(text)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"jobs": (3, 2)}, "job range"), ({"granularity": "class"}, "granularity"),
     ({"budget_s": -1.0}, "budget_s"), ({"marker": "not ok"}, "identifier")],
)  # fmt: skip
def test_options_are_validated(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SplitOptions(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("jobs", [(2, MAX_JOBS + 1), (2, 100_000), (0, 2)])
def test_job_range_is_capped(jobs: tuple[int, int]) -> None:
    with pytest.raises(ValueError, match="job range"):
        SplitOptions(jobs=jobs)


@pytest.mark.parametrize(
    ("text", "expected"), [("4", (4, 4)), (" 2 - 6 ", (2, 6)), (f"1-{MAX_JOBS}", (1, MAX_JOBS))]
)
def test_parse_job_range(text: str, expected: tuple[int, int]) -> None:
    assert parse_job_range(text) == expected


@pytest.mark.parametrize("text", ["", "2-", "a", "2-100000", "9" * 40, "3-2", "-1"])
def test_parse_job_range_refuses(text: str) -> None:
    with pytest.raises(ValueError, match="job"):
        parse_job_range(text)


def test_should_stop_is_asked_between_counts_and_the_plan_says_it_stopped() -> None:
    asked: list[int] = []

    def stop_after_two_more() -> bool:
        asked.append(1)
        return len(asked) > 2

    results, runs = one_job(TESTS, overhead_s=0.0)
    p = plan_splits(results, runs, SplitOptions(jobs=(2, 10)), should_stop=stop_after_two_more)
    # Counts 1 and 2 are always planned (the reference and the first asked-for count); the
    # check before 3 and 4 says go on, the one before 5 says stop.
    assert [row.jobs for row in p.pareto] == [1, 2, 3, 4]
    assert len(asked) == 3
    assert not p.complete
    assert p.complete is False
    assert any("5-10 were not tried" in w for w in p.warnings)
    assert p.verdict == "split"


def test_a_plan_never_stopped_is_complete() -> None:
    p = plan(jobs=(2, 4))
    assert p.complete
    assert p.complete is True


def test_before_is_todays_pipeline_not_the_jobs_of_executed_plans() -> None:
    # Two plain runs of one job, then the jobs of two executed plans (2 and 3 jobs, by
    # plan label or by the stored plan_id): "before" stays the one job run today.
    durations = {f"f{i}.py::t": 10.0 + i for i in range(6)}
    results = [results_for(1, durations), results_for(2, durations)]
    rows = [run_row(1, wall_s=80.0), run_row(2, wall_s=80.0)]
    run_id = 3
    plan_ids: list[str | None] = []
    for plan, n in (("aaa", 2), ("bbb", 3)):
        names = sorted(durations)
        for index in range(n):
            part = {k: durations[k] for k in names[index::n]}
            results.append(results_for(run_id, part))
            labels = {"shard": f"{index + 1}/{n}"} | ({"plan": plan} if plan == "aaa" else {})
            rows.append(run_row(run_id, job=f"{plan}-{index + 1}", wall_s=40.0, labels=labels))
            plan_ids.append(plan)
            run_id += 1
    runs = runs_frame(rows)
    runs["plan_id"] = [None, None, *plan_ids]
    plan = plan_splits(
        pd.concat(results, ignore_index=True), runs, SplitOptions(jobs=(2, 2), overhead_s=20.0)
    )
    assert plan.before.jobs == 1
    assert [job.name for job in plan.before_jobs] == ["test"]
    assert plan.before_jobs[0].n_tests == len(durations)
