"""Rollups checked against hand arithmetic on tiny fixtures."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.rollups.shares import (
    ROLLUP_DIMENSIONS,
    ROW_COLUMNS,
    data_completeness,
    rollup,
    weighted_nearest_rank,
)
from ingest.model import results_frame
from model.frames import FACT_COLUMNS, facts_from_results, sum_fact_values

DOCS = Path(__file__).resolve().parents[2] / "docs" / "rollups.md"


def make_runs(jobs: list[str], *, labels: list[dict[str, str]] | None = None, **cols: Any):
    n = len(jobs)
    frame = pd.DataFrame(
        {
            "run_id": range(1, n + 1),
            "pipeline": "p1",
            "job": jobs,
            "branch": "main",
            "commit": "c0",
            "machine": "large",
            "started_at": pd.Timestamp("2024-03-01T10:00Z"),
            "wall_s": np.nan,
            "peak_rss_mib": np.nan,
            "xdist_workers": 1,
            "labels": labels if labels is not None else [{} for _ in range(n)],
            "partial": False,
            "hidden_rows": 0,
        }
    )
    for name, values in cols.items():
        frame[name] = values
    return frame


def make_results(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows with nodeid, duration_s and optional run_id/markers/...; file from the nodeid."""
    columns: dict[str, list[Any]] = {}
    keys = {k for r in rows for k in r} | {"file", "function", "params", "outcome", "markers"}
    for key in keys:
        columns[key] = [r.get(key, _default(key, r)) for r in rows]
    frame = results_frame({k: v for k, v in columns.items() if k != "run_id"})
    frame["run_id"] = [r.get("run_id", 1) for r in rows]
    return frame


def _default(key: str, row: dict[str, Any]) -> Any:
    nodeid: str = row["nodeid"]
    if key == "file":
        return nodeid.split("::")[0]
    if key == "function":
        return nodeid.split("::")[-1].split("[")[0]
    if key == "params":
        match = re.search(r"\[(.*)\]$", nodeid)
        return match.group(1) if match else None
    if key == "outcome":
        return "passed"
    if key == "markers":
        return []
    return None


def facts_of(rows: list[dict[str, Any]], runs: pd.DataFrame | None = None) -> pd.DataFrame:
    results = make_results(rows)
    if runs is None:
        runs = make_runs(["job"] * int(results["run_id"].max()))
    return facts_from_results(results, runs)


def by_key(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    return {str(r["key"]): {str(k): v for k, v in r.items()} for r in frame.to_dict("records")}


def test_file_totals_and_shares_of_the_grand_total():
    facts = facts_of(
        [
            {"nodeid": "a.py::t1", "duration_s": 1.0},
            {"nodeid": "a.py::t2", "duration_s": 5.0},
            {"nodeid": "b.py::t3", "duration_s": 4.0},
        ]
    )
    result = rollup(facts, "file")
    assert result.grand_total_s == pytest.approx(10.0)
    assert list(result.rows.columns) == list(ROW_COLUMNS)
    assert list(result.rows["key"]) == ["a.py", "b.py"]  # largest first
    rows = by_key(result.rows)
    assert rows["a.py"]["total_s"] == pytest.approx(6.0)
    assert rows["a.py"]["share"] == pytest.approx(0.6)
    assert rows["a.py"]["mean_s"] == pytest.approx(3.0)
    assert rows["a.py"]["max_s"] == pytest.approx(5.0)
    assert rows["a.py"]["tests"] == 2
    assert rows["b.py"]["share"] == pytest.approx(0.4)


def test_p50_p95_are_nearest_rank_over_the_tests_of_a_file():
    # The repro shape: one report, a file of 20 tests taking 1..20 s. Per-test
    # figures: p50 is the 10th test, p95 the 19th; never the file's mean for all three.
    rows = [{"nodeid": f"a.py::t{i:02d}", "duration_s": float(i + 1)} for i in range(20)]
    row = rollup(facts_of(rows), "file").rows.iloc[0]
    assert row["runs"] == 20
    assert row["tests"] == 20
    assert row["mean_s"] == pytest.approx(10.5)
    assert row["p50_s"] == pytest.approx(10.0)  # ceil(0.5*20) = 10th test
    assert row["p95_s"] == pytest.approx(19.0)  # ceil(0.95*20) = 19th test
    assert row["max_s"] == pytest.approx(20.0)


def test_each_test_is_one_sample_its_mean_under_the_key():
    # t1 ran 3 times (1, 1, 4 s: mean 2 s), t2 once (10 s): samples 2 and 10, unweighted.
    runs = make_runs(["job"] * 3)
    rows = [
        {"nodeid": "a.py::t1", "duration_s": 1.0, "run_id": 1},
        {"nodeid": "a.py::t1", "duration_s": 1.0, "run_id": 2},
        {"nodeid": "a.py::t1", "duration_s": 4.0, "run_id": 3},
        {"nodeid": "a.py::t2", "duration_s": 10.0, "run_id": 1},
    ]
    row = rollup(facts_of(rows, runs), "file").rows.iloc[0]
    assert row["mean_s"] == pytest.approx(16.0 / 4)  # per result
    assert row["p50_s"] == pytest.approx(2.0)
    assert row["p95_s"] == pytest.approx(10.0)
    test_row = by_key(rollup(facts_of(rows, runs), "test").rows)["a.py::t1"]
    assert test_row["p50_s"] == test_row["p95_s"] == pytest.approx(2.0)  # one test: its mean


def test_per_test_figures_do_not_depend_on_how_facts_are_bucketed():
    # The same results as raw facts (one row per day) and summed into one weekly bucket give
    # the same figures: the server's weekly tables and the offline CLI agree.
    n = 6
    runs = make_runs(["job"] * n, started_at=pd.date_range("2024-03-04T10:00Z", periods=n))
    rows = [
        {"nodeid": f"a.py::t{i % 3}", "duration_s": float(1 + i * i), "run_id": i + 1}
        for i in range(n)
    ]
    daily = facts_of(rows, runs)
    weekly = sum_fact_values(daily.assign(day=pd.Timestamp("2024-03-04")), list(FACT_COLUMNS[:11]))
    for by in ("file", "test", "function", "job"):
        a = rollup(daily, by).rows.set_index("key")
        b = rollup(weekly, by).rows.set_index("key")
        for column in ("tests", "p50_s", "p95_s", "mean_s", "total_s", "max_s"):
            np.testing.assert_allclose(a[column], b[column])


def test_test_facts_give_the_per_test_columns_of_per_file_facts():
    rows = [{"nodeid": f"a.py::t{i}", "duration_s": float(i + 1)} for i in range(5)]
    facts = facts_of(rows)
    per_file = sum_fact_values(
        facts.assign(nodeid=facts["file"], function=facts["file"]), list(FACT_COLUMNS[:11])
    )
    assert len(per_file) == 1
    got = rollup(per_file, "file", test_facts=facts).rows.iloc[0]
    want = rollup(facts, "file").rows.iloc[0]
    for column in ROW_COLUMNS:
        assert got[column] == want[column] or (
            isinstance(got[column], float) and math.isnan(got[column]) and math.isnan(want[column])
        ), column


def test_weighted_nearest_rank_matches_numpy_inverted_cdf_for_unit_weights():
    rng = np.random.default_rng(7)
    group = rng.integers(0, 5, 300)
    values = rng.lognormal(0, 1, 300)
    for q in (0.5, 0.9, 0.95):
        got = weighted_nearest_rank(group, values, np.ones(300), 5, q)
        want = [np.quantile(values[group == g], q, method="inverted_cdf") for g in range(5)]
        np.testing.assert_allclose(got, want)


def test_function_strips_parametrize_ids_and_shares_within_its_file():
    facts = facts_of(
        [
            {"nodeid": "t.py::test_aug[a-1]", "duration_s": 3.0},
            {"nodeid": "t.py::test_aug[b-2]", "duration_s": 5.0},
            {"nodeid": "t.py::test_other", "duration_s": 2.0},
            {"nodeid": "u.py::TestX::test_y[p]", "duration_s": 10.0},
        ]
    )
    functions = by_key(rollup(facts, "function").rows)
    assert set(functions) == {"t.py::test_aug", "t.py::test_other", "u.py::TestX::test_y"}
    aug = functions["t.py::test_aug"]
    assert aug["total_s"] == pytest.approx(8.0)
    assert aug["tests"] == 2
    assert aug["parent"] == "t.py"
    assert aug["parent_share"] == pytest.approx(0.8)
    assert functions["u.py::TestX::test_y"]["parent_share"] == pytest.approx(1.0)

    variant = by_key(rollup(facts, "test").rows)["t.py::test_aug[b-2]"]
    assert variant["parent"] == "t.py::test_aug"
    assert variant["parent_share"] == pytest.approx(5.0 / 8.0)


def test_markers_double_count_and_keep_unmarked_and_unknown_rows():
    facts = facts_of(
        [
            {"nodeid": "a.py::t1", "duration_s": 3.0, "markers": ["slow", "gpu"]},
            {"nodeid": "a.py::t2", "duration_s": 1.0, "markers": ["slow"]},
            {"nodeid": "a.py::t3", "duration_s": 2.0, "markers": []},
            {"nodeid": "a.py::t4", "duration_s": 4.0, "markers": None},
        ]
    )
    result = rollup(facts, "marker")
    rows = by_key(result.rows)
    assert {k: r["total_s"] for k, r in rows.items()} == {
        "slow": 4.0,
        "gpu": 3.0,
        "(unmarked)": 2.0,
        "(unknown)": 4.0,
    }
    assert rows["slow"]["tests"] == 2
    assert rows["slow"]["share"] == pytest.approx(0.4)
    # A test under two markers counts twice: shares sum past 1, the grand total does not.
    assert result.grand_total_s == pytest.approx(10.0)
    assert result.rows["share"].sum() == pytest.approx(1.3)
    assert rows["slow"]["parent"] is None
    assert math.isnan(rows["slow"]["parent_share"])


def test_file_in_two_jobs_takes_the_job_where_it_spends_most():
    runs = make_runs(["cpu", "gpu"])
    facts = facts_of(
        [
            {"nodeid": "x.py::t", "duration_s": 1.0, "run_id": 1},
            {"nodeid": "y.py::t", "duration_s": 9.0, "run_id": 1},
            {"nodeid": "x.py::t", "duration_s": 6.0, "run_id": 2},
            {"nodeid": "z.py::t", "duration_s": 4.0, "run_id": 2},
        ],
        runs,
    )
    rows = by_key(rollup(facts, "file").rows)
    assert rows["x.py"]["total_s"] == pytest.approx(7.0)
    assert rows["x.py"]["parent"] == "gpu"
    assert rows["x.py"]["parent_share"] == pytest.approx(0.6)  # 6 of gpu's 10
    assert rows["y.py"]["parent"] == "cpu"
    assert rows["y.py"]["parent_share"] == pytest.approx(0.9)


def test_a_parent_tie_goes_to_the_first_parent_by_name():
    runs = make_runs(["zeta", "alpha", "mid"])
    facts = facts_of(
        [
            {"nodeid": "x.py::t", "duration_s": 5.0, "run_id": 1},
            {"nodeid": "x.py::t", "duration_s": 5.0, "run_id": 2},
            {"nodeid": "x.py::t", "duration_s": 2.0, "run_id": 3},
            {"nodeid": "w.py::t", "duration_s": 3.0, "run_id": 2},
        ],
        runs,
    )
    rows = by_key(rollup(facts, "file").rows)
    assert rows["x.py"]["parent"] == "alpha"
    assert rows["x.py"]["parent_share"] == pytest.approx(5.0 / 8.0)
    markers = by_key(rollup(facts, "marker", within="job").rows)
    assert markers["(unmarked)"]["parent"] == "alpha"


@pytest.mark.parametrize("sort", ["total_s", "p95_s", "failures", "key"])
@pytest.mark.parametrize("descending", [True, False])
def test_a_limited_rollup_is_the_head_of_the_full_one(sort: str, descending: bool) -> None:
    rng = np.random.default_rng(7)
    rows = [
        {
            "nodeid": f"f{i % 5}.py::t{i}",
            # Few distinct values: ties at the cut, which the key must break.
            "duration_s": float(rng.integers(1, 4)) if i % 9 else None,
            "outcome": "failed" if i % 4 == 0 else "passed",
        }
        for i in range(60)
    ]
    facts = facts_of(rows)
    full = rollup(facts, "test", sort=sort, descending=descending)
    for limit in (1, 7, 20, 59, 60, 80):
        head = rollup(facts, "test", sort=sort, descending=descending, limit=limit)
        assert head.keys_total == full.keys_total == 60
        pd.testing.assert_frame_equal(head.rows, full.rows.head(limit))


def test_label_dimension_and_explicit_within():
    runs = make_runs(
        ["j1", "j2", "j3"],
        labels=[{"os": "linux", "python": "3.11"}, {"os": "macos"}, {}],
    )
    facts = facts_of(
        [
            {"nodeid": "a.py::t", "duration_s": 2.0, "run_id": 1},
            {"nodeid": "a.py::t", "duration_s": 3.0, "run_id": 2},
            {"nodeid": "a.py::t", "duration_s": 5.0, "run_id": 3},
        ],
        runs,
    )
    assert {k: r["total_s"] for k, r in by_key(rollup(facts, "label:os").rows).items()} == {
        "linux": 2.0,
        "macos": 3.0,
        "(none)": 5.0,
    }
    python = by_key(rollup(facts, "label:python").rows)
    assert python["3.11"]["runs"] == 1
    assert python["(none)"]["runs"] == 2
    jobs = by_key(rollup(facts, "job", within="label:os").rows)
    assert jobs["j2"]["parent"] == "macos"
    assert jobs["j2"]["parent_share"] == pytest.approx(1.0)


def test_phases_failures_and_flaky_are_summed_and_unknown_phases_stay_unknown():
    facts = facts_of(
        [
            {
                "nodeid": "a.py::t1",
                "duration_s": 3.0,
                "setup_s": 2.0,
                "call_s": 0.5,
                "teardown_s": 0.5,
                "outcome": "failed",
            },
            {
                "nodeid": "a.py::t2",
                "duration_s": 1.0,
                "setup_s": 0.25,
                "call_s": 0.75,
                "teardown_s": 0.0,
                "flaky": True,
                "outcome": "error",
            },
            {"nodeid": "b.py::t3", "duration_s": 4.0},
        ]
    )
    rows = by_key(rollup(facts, "file").rows)
    assert rows["a.py"]["setup_s"] == pytest.approx(2.25)
    assert rows["a.py"]["call_s"] == pytest.approx(1.25)
    assert rows["a.py"]["teardown_s"] == pytest.approx(0.5)
    assert rows["a.py"]["failures"] == 2
    assert rows["a.py"]["flaky"] == 1
    assert math.isnan(rows["b.py"]["setup_s"])
    assert rows["b.py"]["failures"] == 0


def test_completeness_counts_missing_durations_and_partial_reports():
    runs = make_runs(["j1", "j2", "j3"], partial=[True, True, False], hidden_rows=[7, 0, 0])
    facts = facts_of(
        [
            {"nodeid": "a.py::t1", "duration_s": 2.0, "run_id": 1},
            {"nodeid": "a.py::t2", "duration_s": None, "run_id": 2},
            {"nodeid": "a.py::t3", "duration_s": None, "run_id": 3},
            {"nodeid": "a.py::t4", "duration_s": 1.0, "run_id": 3},
        ],
        runs,
    )
    result = rollup(facts, "file", runs=runs)
    row = result.rows.iloc[0]
    assert row["runs"] == 4
    assert row["missing"] == 2
    assert row["mean_s"] == pytest.approx(1.5)  # over the two known durations
    c = result.completeness
    assert (c.results, c.without_duration) == (4, 2)
    assert (c.runs, c.partial_runs, c.hidden_rows, c.partial_runs_unknown) == (3, 2, 7, 1)
    assert not c.complete
    text = c.describe()
    assert "2 of 4 results have no duration" in text
    assert "2 of 3 runs came from partial reports" in text
    assert "at least 7 rows hidden" in text

    whole = data_completeness(facts.iloc[[0]], runs.iloc[[2]])
    assert whole.complete
    assert whole.describe().startswith("complete")


def test_sort_limit_and_keys_total():
    facts = facts_of([{"nodeid": f"f{i}.py::t", "duration_s": float(i)} for i in range(1, 6)])
    top = rollup(facts, "file", limit=2)
    assert list(top.rows["key"]) == ["f5.py", "f4.py"]
    assert top.keys_total == 5
    assert top.grand_total_s == pytest.approx(15.0)
    ascending = rollup(facts, "file", sort="total_s", descending=False, limit=1)
    assert list(ascending.rows["key"]) == ["f1.py"]
    by_name = rollup(facts, "file", sort="key", descending=False)
    assert list(by_name.rows["key"]) == ["f1.py", "f2.py", "f3.py", "f4.py", "f5.py"]


def test_records_are_json_ready_with_none_for_unknown():
    facts = facts_of([{"nodeid": "a.py::t", "duration_s": 1.5}])
    records = rollup(facts, "marker").to_records()
    assert records[0]["key"] == "(unmarked)"
    assert records[0]["parent_share"] is None
    assert records[0]["setup_s"] is None
    assert isinstance(records[0]["runs"], int)
    assert json.loads(json.dumps(records, allow_nan=False)) == records


def test_bad_dimensions_are_rejected():
    facts = facts_of([{"nodeid": "a.py::t", "duration_s": 1.0}])
    with pytest.raises(ValueError, match="unknown dimension 'nope'"):
        rollup(facts, "nope")
    with pytest.raises(ValueError, match="unknown dimension"):
        rollup(facts, "label:")
    with pytest.raises(ValueError, match="within itself"):
        rollup(facts, "file", within="file")
    with pytest.raises(ValueError, match="cannot sort"):
        rollup(facts, "file", sort="bogus")


def test_empty_facts_give_no_rows():
    facts = pd.DataFrame({c: pd.Series(dtype=object) for c in FACT_COLUMNS})
    for c in ("runs", "known", "failures", "flaky"):
        facts[c] = facts[c].astype("int64")
    for c in ("total_s", "max_s", "setup_s", "call_s", "teardown_s", "peak_rss_mib"):
        facts[c] = facts[c].astype(float)
    result = rollup(facts, "file")
    assert result.rows.empty
    assert result.grand_total_s == 0.0


def test_every_dimension_is_documented():
    table = DOCS.read_text()
    for name in ROLLUP_DIMENSIONS:
        assert f"| `{name}` |" in table, f"{name} missing from docs/rollups.md"


def test_sums_that_differ_in_their_last_bits_are_ties_broken_by_key():
    # 0.1 + 0.2 + 0.3 is not 0.3 + 0.2 + 0.1 in floating point: the same durations summed in
    # two orders (say a rollup row, then results not compacted yet) are still one value.
    assert 0.1 + 0.2 + 0.3 != 0.3 + 0.2 + 0.1
    rows = [
        {"nodeid": f"{f}::t{i}", "duration_s": d}
        for f, durations in (("b.py", (0.1, 0.2, 0.3)), ("a.py", (0.3, 0.2, 0.1)))
        for i, d in enumerate(durations)
    ]
    rows.append({"nodeid": "c.py::t", "duration_s": 0.5})
    facts = facts_of(rows)
    totals = {r["key"]: r["total_s"] for r in rollup(facts, "file").rows.to_dict("records")}
    assert totals["a.py"] != totals["b.py"]  # the two sums do differ in their last bits
    for descending in (True, False):
        full = rollup(facts, "file", descending=descending)
        ties = [k for k in full.rows["key"] if k != "c.py"]
        assert ties == ["a.py", "b.py"], descending
    assert list(rollup(facts, "file", limit=1, descending=False).rows["key"]) == ["c.py"]
    assert list(rollup(facts, "file", limit=2).rows["key"]) == ["a.py", "b.py"]
    assert list(rollup(facts, "file", limit=1).rows["key"]) == ["a.py"]
