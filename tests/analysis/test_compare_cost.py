"""Machine time priced per run; the stored split plan against a pipeline's moved tests."""

from __future__ import annotations

import statistics

import pandas as pd

from analysis.accuracy.plan_record import PlanRecord, PredictedJob
from analysis.compare.cost import compare_cost, machine_seconds
from analysis.compare.plan_fit import MIN_OVERRUN_S, fit_plan, job_of_tests, moved_seconds
from analysis.compare.runs import compare_runs

PRICES = {"small": 0.008, "large": 0.032}


def _runs(rows: list[tuple[int, str | None, float | None, float | None, float]]) -> pd.DataFrame:
    return pd.DataFrame(
        rows, columns=["run_id", "machine", "job_wall_s", "wall_s", "test_s"]
    ).astype({"job_wall_s": "float64", "wall_s": "float64"})


def test_machine_seconds_prefer_job_wall_then_wall_then_tests() -> None:
    runs = _runs([(1, "small", 100.0, 90.0, 50.0), (2, "small", None, 90.0, 50.0)])
    runs.loc[2] = [3, "small", None, None, 50.0]
    assert machine_seconds(runs).tolist() == [100.0, 90.0, 50.0]


def test_cost_is_machine_minutes_times_the_catalogue_price() -> None:
    head = _runs([(9, "large", 600.0, None, 500.0), (10, "small", 300.0, None, 250.0)])
    base = _runs([(i, "large", 540.0 + 6 * i, None, 400.0) for i in range(5)])
    priced = compare_cost(head, base, PRICES, "USD")
    assert priced.cost is not None
    # Two head jobs add up; the base is per run.
    assert priced.machine_time.here == 900.0
    assert priced.machine_time.base_median == statistics.median(540.0 + 6 * i for i in range(5))
    assert abs(priced.cost.here - (600 / 60 * 0.032 + 300 / 60 * 0.008)) < 1e-12
    assert abs(priced.cost.base_median - 552.0 / 60 * 0.032) < 1e-12
    assert priced.unit == "USD"
    assert priced.unpriced_machines == ()


def test_an_unpriced_machine_leaves_the_cost_unknown_never_partial() -> None:
    head = _runs([(9, "large", 600.0, None, 500.0), (10, "gpu-x", 300.0, None, 250.0)])
    base = _runs([(1, "large", 540.0, None, 400.0), (2, None, 500.0, None, 400.0)])
    priced = compare_cost(head, base, PRICES, "USD")
    assert priced.cost is None
    assert priced.unpriced_machines == ("(none)", "gpu-x")
    assert priced.machine_time.here == 900.0
    assert compare_cost(head, base, None, None).cost is None


def _plan(walls: list[float], members: list[tuple[str, ...]], workers: int = 1) -> PlanRecord:
    jobs = tuple(
        PredictedJob(
            index=i + 1,
            name=f"job {i + 1}",
            wall_s=wall,
            tests_s=wall - 10,
            setup_s=10.0,
            workers=workers,
            members=m,
            members_total=len(m),
        )
        for i, (wall, m) in enumerate(zip(walls, members, strict=True))
    )
    return PlanRecord("p1", "split", "os=linux", jobs)


def test_tests_go_to_their_finest_member_else_the_home_job() -> None:
    plan = _plan(
        [100.0, 100.0],
        [
            ("tests/a.py", "tests/b.py", "tests/c.py"),
            ("tests/m.py::TestBig", "tests/n.py::test_f"),
        ],
    )
    where = job_of_tests(
        plan,
        [
            "tests/a.py::test_x",
            "tests/m.py::TestBig::test_y",
            "tests/m.py::test_other",
            "tests/n.py::test_f[1-2]",
            "tests/new_file.py::test_z",
        ],
    )
    assert where == {
        "tests/a.py::test_x": 0,
        "tests/m.py::TestBig::test_y": 1,
        "tests/m.py::test_other": 0,  # no member names it: the home job (most members)
        "tests/n.py::test_f[1-2]": 1,
        "tests/new_file.py::test_z": 0,
    }


def _results(run_id: int, rows: dict[str, float]) -> list[dict[str, object]]:
    return [
        {"run_id": run_id, "nodeid": n, "duration_s": d, "outcome": "passed", "flaky": False}
        for n, d in rows.items()
    ]


def test_a_pr_that_pushes_a_job_past_the_target_wait_is_named_with_its_overrun() -> None:
    base_rows: list[dict[str, object]] = []
    for i in range(5):
        base_rows += _results(
            i, {"tests/a.py::t": 40.0 + 0.1 * i, "tests/b.py::t": 30.0, "tests/old.py::t": 5.0}
        )
    head = pd.DataFrame(
        _results(9, {"tests/a.py::t": 40.2, "tests/b.py::t": 55.0, "tests/new.py::t": 3.0})
    )
    base_results = pd.DataFrame(base_rows)
    comparison = compare_runs(
        pd.DataFrame({"run_id": [9], "wall_s": [1.0]}),
        head,
        pd.DataFrame({"run_id": range(5), "wall_s": [1.0] * 5}),
        base_results,
    )
    moves = moved_seconds(comparison, base_results)
    # Only what moved beyond noise: b is 25 s slower, new adds 3 s, old's 5 s are gone.
    assert moves == {"tests/b.py::t": 25.0, "tests/new.py::t": 3.0, "tests/old.py::t": -5.0}
    plan = _plan([60.0, 50.0], [("tests/a.py", "tests/new.py", "tests/old.py"), ("tests/b.py",)])
    fit = fit_plan(plan, moves)
    assert not fit.fits
    assert fit.target_wait_s == 60.0
    [overrun] = fit.overruns
    assert (overrun.name, overrun.added_s, overrun.wall_s) == ("job 2", 25.0, 75.0)
    assert overrun.overrun_s == 15.0
    assert fit.wait_s == 75.0
    # Job 1 gained 3 s and lost 5 s: not named.
    # With two xdist workers the same move adds half the wall: 62.5 s, still over.
    halved = fit_plan(_plan([60.0, 50.0], [("tests/a.py",), ("tests/b.py",)], workers=2), moves)
    assert [o.overrun_s for o in halved.overruns] == [2.5]


def test_a_move_that_stays_under_the_target_wait_fits() -> None:
    plan = _plan([60.0, 50.0], [("tests/a.py",), ("tests/b.py",)])
    assert fit_plan(plan, {"tests/b.py::t": 9.0}).fits
    # Within the plan's own rounding: not news.
    assert fit_plan(plan, {"tests/b.py::t": 10.0 + MIN_OVERRUN_S / 2}).fits
    # Faster tests never overrun.
    assert fit_plan(plan, {"tests/a.py::t": -30.0}).fits
