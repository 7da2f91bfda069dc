"""Pipeline wait, machine time and setup overhead against hand arithmetic."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from analysis.rollups.pipelines import (
    daily_trend,
    job_summary,
    pipeline_summary,
    run_test_seconds,
    run_walls,
    with_test_seconds,
)
from ingest.model import results_frame


def make_runs(**cols):
    n = len(cols["job"])
    base = {
        "run_id": list(range(1, n + 1)),
        "pipeline": "p1",
        "branch": "main",
        "commit": "c0",
        "machine": "large",
        "started_at": pd.Timestamp("2024-03-01T10:00Z"),
        "wall_s": np.nan,
        "peak_rss_mib": np.nan,
        "xdist_workers": 1,
        "labels": [{} for _ in range(n)],
        "partial": False,
        "hidden_rows": 0,
    }
    base.update(cols)
    return pd.DataFrame(base)


def test_wait_is_the_longest_job_and_machine_time_the_sum():
    runs = make_runs(job=["a", "b", "c"], wall_s=[100.0, 300.0, 50.0], test_s=[80.0, 250.0, 40.0])
    summary = pipeline_summary(runs)
    row = summary.pipelines.iloc[0]
    assert row["wait_s"] == pytest.approx(300.0)
    assert row["machine_s"] == pytest.approx(450.0)
    assert row["test_s"] == pytest.approx(370.0)
    assert row["setup_overhead_s"] == pytest.approx(20 + 50 + 10)
    assert row["critical_job"] == "b"
    assert row["jobs"] == 3
    assert summary.estimated_walls == 0


def test_missing_wall_is_estimated_from_test_time_per_worker_and_flagged():
    runs = make_runs(
        job=["a", "b"], wall_s=[np.nan, 30.0], xdist_workers=[4, 1], test_s=[200.0, 20.0]
    )
    walls = run_walls(runs).set_index("job")
    assert walls.loc["a", "wall_s"] == pytest.approx(50.0)  # 200 s over 4 workers
    assert bool(walls.loc["a", "wall_estimated"])
    assert math.isnan(walls["setup_overhead_s"]["a"])
    assert walls.loc["b", "setup_overhead_s"] == pytest.approx(10.0)
    summary = pipeline_summary(runs)
    assert summary.estimated_walls == 1
    row = summary.pipelines.iloc[0]
    assert row["wait_s"] == pytest.approx(50.0)
    assert row["critical_job"] == "a"
    assert row["estimated_walls"] == 1
    assert row["machine_s"] == pytest.approx(80.0)


def test_test_time_is_summed_from_results_when_runs_lack_it():
    runs = make_runs(job=["a", "b"], wall_s=[10.0, 20.0], xdist_workers=[2, 1])
    results = results_frame(
        {"nodeid": ["t1", "t2", "t3", "t4"], "function": ["t1", "t2", "t3", "t4"],
         "outcome": ["passed"] * 4, "duration_s": [3.0, 5.0, None, 7.0]}
    )  # fmt: skip
    results["run_id"] = [1, 1, 2, 2]
    assert run_test_seconds(results).to_dict() == {1: 8.0, 2: 7.0}
    assert list(with_test_seconds(runs, results)["test_s"]) == [8.0, 7.0]
    walls = run_walls(runs, results=results).set_index("job")
    assert walls.loc["a", "test_wall_s"] == pytest.approx(4.0)
    assert walls.loc["a", "setup_overhead_s"] == pytest.approx(6.0)
    given = make_runs(job=["a", "b"], wall_s=[10.0, 20.0], xdist_workers=[2, 1], test_s=[8.0, 7.0])
    pd.testing.assert_frame_equal(
        pipeline_summary(runs, results=results).pipelines, pipeline_summary(given).pipelines
    )
    with pytest.raises(ValueError, match="no test_s"):
        pipeline_summary(runs)


def test_runs_without_a_pipeline_are_pipelines_of_their_own():
    runs = make_runs(
        job=["a", "b", "a"], pipeline=["p1", "p1", None], wall_s=[5.0, 6.0, 7.0], test_s=0.0
    )
    summary = pipeline_summary(runs)
    assert summary.runs_without_pipeline == 1
    by_id = summary.pipelines.set_index("pipeline")
    assert set(by_id.index) == {"p1", "run:3"}
    assert by_id.loc["run:3", "wait_s"] == pytest.approx(7.0)
    assert by_id.loc["p1", "wait_s"] == pytest.approx(6.0)


def test_job_summary_medians_and_setup_overhead():
    runs = make_runs(
        job=["a", "a", "a", "b"],
        pipeline=["p1", "p2", "p3", "p1"],
        wall_s=[100.0, 200.0, 400.0, 60.0],
        test_s=[80.0, 100.0, 300.0, 60.0],
        xdist_workers=[2, 2, 2, 1],
    )
    table = job_summary(runs)
    assert list(table["job"]) == ["a", "b"]  # longest median wall first
    a = table.set_index("job").loc["a"]
    assert a["runs"] == 3
    assert a["wall_p50_s"] == pytest.approx(200.0)
    assert a["wall_max_s"] == pytest.approx(400.0)
    assert a["test_p50_s"] == pytest.approx(100.0)
    assert a["test_wall_p50_s"] == pytest.approx(50.0)
    # overheads: 100-40, 200-50, 400-150 = 60, 150, 250 -> median 150
    assert a["setup_overhead_p50_s"] == pytest.approx(150.0)
    assert a["setup_share"] == pytest.approx(150.0 / 200.0)
    assert a["machine_s"] == pytest.approx(700.0)
    assert a["machine"] == "large"


def test_daily_trend_per_pipeline_day():
    runs = make_runs(
        job=["a", "b", "a", "a", "a"],
        pipeline=["p1", "p1", "p2", "p3", "p4"],
        started_at=pd.to_datetime(
            pd.Series(["2024-03-01T10:00Z", "2024-03-01T10:05Z", "2024-03-02T09:00Z",
                       "2024-03-02T23:59Z", None]), utc=True,
        ),
        wall_s=[100.0, 300.0, 40.0, 50.0, 10.0],
        test_s=[90.0, 200.0, 30.0, 45.0, 5.0],
    )  # fmt: skip
    trend = daily_trend(runs)
    assert list(trend["day"]) == [pd.Timestamp("2024-03-01"), pd.Timestamp("2024-03-02")]
    first, second = trend.to_dict(orient="records")
    assert (first["pipelines"], first["jobs"]) == (1, 2)
    assert first["wait_p50_s"] == pytest.approx(300.0)
    assert first["machine_s"] == pytest.approx(400.0)
    assert first["test_s"] == pytest.approx(290.0)
    assert first["setup_overhead_s"] == pytest.approx(110.0)
    assert second["pipelines"] == 2
    assert second["wait_p50_s"] == pytest.approx(45.0)
    assert second["wait_max_s"] == pytest.approx(50.0)
    assert second["machine_s"] == pytest.approx(90.0)


def test_pipeline_records_are_json_ready():
    runs = make_runs(job=["a"], wall_s=[np.nan], test_s=[3.0])
    record = pipeline_summary(runs).to_records()[0]
    assert record["wait_s"] == pytest.approx(3.0)
    assert record["setup_overhead_s"] is None
    assert record["started_at"] == "2024-03-01T10:00:00+00:00"
