"""The pure comparison names what moved beyond its own noise, and only that."""

from __future__ import annotations

import statistics

import pandas as pd

from analysis.compare.runs import FLOOR_S, MAD_SIGMA, K, compare_runs, threshold


def _results(run_id: int, rows: dict[str, tuple[float, str, bool]]) -> list[dict[str, object]]:
    return [
        {"run_id": run_id, "nodeid": n, "duration_s": d, "outcome": o, "flaky": f}
        for n, (d, o, f) in rows.items()
    ]


def test_compare_names_slower_new_removed_failures_and_flaky() -> None:
    base_rows: list[dict[str, object]] = []
    steady = [1.00, 1.01, 0.99, 1.00, 1.02]
    noisy = [1.0, 3.0, 0.5, 2.5, 1.2]
    for i in range(5):
        base_rows += _results(
            i,
            {
                "t::steady": (steady[i], "passed", False),
                "t::noisy": (noisy[i], "passed", False),
                "t::gone": (0.2, "passed", False),
                "t::breaks": (0.1, "passed", False),
                "t::wobbly": (0.1, "failed" if i == 2 else "passed", False),
                "t::quick": (2.0, "passed", False),
            },
        )
    base_runs = pd.DataFrame({"run_id": range(5), "wall_s": [10.0, 11.0, 10.5, 10.2, 30.0]})
    head = pd.DataFrame(
        _results(
            9,
            {
                "t::steady": (1.5, "passed", False),  # +50% on a steady series: slower
                "t::noisy": (2.9, "passed", False),  # within its own noise: silent
                "t::breaks": (0.1, "failed", False),
                "t::wobbly": (0.1, "failed", False),  # known flaky: not a new failure
                "t::quick": (0.5, "passed", False),
                "t::new": (4.0, "passed", False),
            },
        )
    )
    answer = compare_runs(
        pd.DataFrame({"run_id": [9], "wall_s": [12.0]}), head, base_runs, pd.DataFrame(base_rows)
    )
    assert [m.nodeid for m in answer.slower] == ["t::steady"]
    assert [m.nodeid for m in answer.faster] == ["t::quick"]
    assert [(m.nodeid, m.here_s) for m in answer.new_tests] == [("t::new", 4.0)]
    assert answer.removed_tests == ("t::gone",)
    assert answer.new_failures == ("t::breaks",)
    assert answer.flaky == ("t::wobbly",)
    # Recomputed here from the raw numbers.
    walls = [10.0, 11.0, 10.5, 10.2, 30.0]
    med = statistics.median(walls)
    mad = statistics.median(abs(w - med) for w in walls)
    assert answer.wall.base_median == med
    assert abs(answer.wall.base_spread - MAD_SIGMA * mad) < 1e-12
    assert answer.test_time.here == sum(r["duration_s"] for r in head.to_dict("records"))
    steady_move = answer.slower[0]
    s_med = statistics.median(steady)
    s_mad = MAD_SIGMA * statistics.median(abs(v - s_med) for v in steady)
    assert steady_move.threshold_s == max(K * s_mad, FLOOR_S, 0.1 * s_med)
    assert threshold(1.0, 0.0) == 0.1
