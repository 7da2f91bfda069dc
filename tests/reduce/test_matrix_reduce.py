"""CI-matrix reduction verdicts on hand-built histories."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from analysis.reduce.matrix_reduce import reduce_matrix
from app.schemas import reduce as answers
from ingest.model import results_frame
from model.frames import RUN_COLUMNS


def _runs(specs):
    """specs: (run_id, commit, labels, day, branch)."""
    rows = []
    for run_id, commit, labels, day, branch in specs:
        rows.append(
            {
                "run_id": run_id,
                "pipeline": None,
                "job": f"job{run_id}",
                "branch": branch,
                "commit": commit,
                "machine": None,
                "started_at": pd.Timestamp(day, tz="UTC") if day else pd.NaT,
                "wall_s": np.nan,
                "peak_rss_mib": np.nan,
                "xdist_workers": 1,
                "labels": labels,
                "partial": False,
                "hidden_rows": 0,
            }
        )
    return pd.DataFrame(rows, columns=list(RUN_COLUMNS))


def _results(specs):
    """specs: (run_id, nodeid, outcome, duration_s, markers)."""
    frame = results_frame(
        {
            "nodeid": [s[1] for s in specs],
            "file": [s[1].split("::")[0] for s in specs],
            "function": [s[1].split("::")[-1] for s in specs],
            "markers": [s[4] for s in specs],
            "outcome": [s[2] for s in specs],
            "duration_s": [s[3] for s in specs],
        }
    )
    frame["run_id"] = [s[0] for s in specs]
    return frame


def _one(verdicts, group, dimension):
    (found,) = [v for v in verdicts if v.group == group and v.dimension == dimension]
    return found


MODELS = "test/test_models.py"


def test_outcomes_differing_across_cuda_keep_with_evidence():
    runs = _runs(
        [
            (1, "c1", {"cuda": "11.8", "python": "3.11"}, "2024-01-01", "pr-1"),
            (2, "c1", {"cuda": "12.1", "python": "3.11"}, "2024-01-01", "pr-1"),
        ]
    )
    results = _results(
        [
            (1, f"{MODELS}::test_resnet", "passed", 10.0, None),
            (2, f"{MODELS}::test_resnet", "failed", 10.2, None),
            (1, f"{MODELS}::test_vit", "passed", 5.0, None),
            (2, f"{MODELS}::test_vit", "passed", 5.1, None),
        ]
    )
    verdict = _one(reduce_matrix(results, runs), MODELS, "cuda")
    assert verdict.verdict == "keep"
    assert verdict.values == ("11.8", "12.1")
    assert verdict.compared == 2
    assert verdict.outcome_differs == 1
    assert verdict.duration_differs == 0
    (ev,) = verdict.evidence
    assert ev.kind == "outcome"
    assert ev.test == f"{MODELS}::test_resnet"
    assert ev.context == "c1"
    assert ev.fixed_labels == "python=3.11"
    assert ev.passed_on == ("11.8",)
    assert ev.failed_on == ("12.1",)
    assert "keep every cuda" in verdict.recommendation
    assert verdict.dropped_s == 0.0
    data = json.loads(answers.MatrixVerdict.of(verdict).model_dump_json(exclude_unset=True))
    assert data["evidence"][0]["failed_on"] == ["12.1"]


UTILS = "test/test_utils.py"


def _python_history():
    # Two commits on two days, python 3.9 and 3.10 on each, plus a main-branch run on 3.9.
    runs = _runs(
        [
            (1, "c1", {"python": "3.9", "os": "linux"}, "2024-01-01", "pr-1"),
            (2, "c1", {"python": "3.10", "os": "linux"}, "2024-01-01", "pr-1"),
            (3, "c2", {"python": "3.9", "os": "linux"}, "2024-01-03", "pr-2"),
            (4, "c2", {"python": "3.10", "os": "linux"}, "2024-01-03", "pr-2"),
            (5, "c3", {"python": "3.9", "os": "linux"}, "2024-01-03", "main"),
        ]
    )
    results = _results(
        [
            (1, f"{UTILS}::test_a", "passed", 2.0, ["fast"]),
            (2, f"{UTILS}::test_a", "passed", 2.5, ["fast"]),
            (1, f"{UTILS}::test_b", "failed", 1.0, []),
            (2, f"{UTILS}::test_b", "failed", 1.2, []),
            (3, f"{UTILS}::test_a", "passed", 2.2, ["fast"]),
            (4, f"{UTILS}::test_a", "passed", 2.1, ["fast"]),
            (3, f"{UTILS}::test_b", "passed", 1.1, []),
            (4, f"{UTILS}::test_b", "passed", 0.9, []),
            (5, f"{UTILS}::test_a", "passed", 2.0, ["fast"]),
        ]
    )
    return results, runs


def test_identical_across_python_reduce_with_saved_time():
    results, runs = _python_history()
    verdict = _one(reduce_matrix(results, runs), UTILS, "python")
    assert verdict.verdict == "reduce"
    assert verdict.compared == 4  # 2 tests x 2 commits seen on both values
    assert verdict.values == ("3.9", "3.10")  # natural order
    # 3.9 has 5 results, 3.10 has 4: keep 3.9, drop 3.10 on non-main runs.
    assert verdict.keep_value == "3.9"
    assert verdict.dropped_s == pytest.approx(2.5 + 1.2 + 2.1 + 0.9)  # 6.7
    assert verdict.window_days == 3  # 2024-01-01 .. 2024-01-03
    assert verdict.dropped_s_per_day == pytest.approx(6.7 / 3)
    assert "python=3.9 only for pull requests" in verdict.recommendation
    # "os" has a single value: no verdict for it.
    assert not [v for v in reduce_matrix(results, runs) if v.dimension == "os"]


def test_tied_counts_keep_the_highest_version():
    results, runs = _python_history()
    results = results[results["run_id"] != 5]
    verdict = _one(reduce_matrix(results, runs), UTILS, "python")
    assert verdict.keep_value == "3.10"
    assert verdict.dropped_s == pytest.approx(2.0 + 1.0 + 2.2 + 1.1)


def test_main_branch_time_is_not_counted_as_saved():
    results, runs = _python_history()
    runs.loc[runs["run_id"] == 4, "branch"] = "main"
    verdict = _one(reduce_matrix(results, runs), UTILS, "python")
    assert verdict.dropped_s == pytest.approx(2.5 + 1.2)


def test_duration_threshold():
    runs = _runs(
        [
            (1, "c1", {"python": "3.10"}, "2024-01-01", None),
            (2, "c1", {"python": "3.11"}, "2024-01-01", None),
        ]
    )
    results = _results(
        [
            (1, "t/test_io.py::test_read", "passed", 1.0, None),
            (2, "t/test_io.py::test_read", "passed", 2.0, None),
            (1, "t/test_io.py::test_tiny", "passed", 0.01, None),
            (2, "t/test_io.py::test_tiny", "passed", 0.05, None),  # 5x but only 40 ms
        ]
    )
    verdict = _one(reduce_matrix(results, runs), "t/test_io.py", "python")
    assert verdict.verdict == "keep"
    assert verdict.duration_differs == 1
    (ev,) = verdict.evidence
    assert ev.kind == "duration"
    assert ev.test == "t/test_io.py::test_read"
    assert ev.ratio == pytest.approx(2.0)
    assert ev.median_s == {"3.10": 1.0, "3.11": 2.0}
    relaxed = _one(reduce_matrix(results, runs, threshold=2.5), "t/test_io.py", "python")
    assert relaxed.verdict == "reduce"
    assert relaxed.keep_value == "3.11"
    assert relaxed.dropped_s == pytest.approx(1.01)
    assert relaxed.window_days == 1


def test_different_commits_only_is_insufficient():
    runs = _runs(
        [
            (1, "c1", {"python": "3.10"}, None, None),
            (2, "c2", {"python": "3.11"}, None, None),
        ]
    )
    results = _results(
        [
            (1, "t/test_x.py::test_1", "passed", 1.0, None),
            (2, "t/test_x.py::test_1", "failed", 1.0, None),
        ]
    )
    verdict = _one(reduce_matrix(results, runs), "t/test_x.py", "python")
    assert verdict.verdict == "insufficient-data"
    assert verdict.compared == 0
    assert verdict.window_days is None
    assert verdict.dropped_s_per_day is None


def test_other_labels_are_held_fixed():
    # py3.10 passes on linux, py3.11 fails on windows: different os, so not comparable.
    runs = _runs(
        [
            (1, "c1", {"python": "3.10", "os": "linux"}, None, None),
            (2, "c1", {"python": "3.11", "os": "windows"}, None, None),
        ]
    )
    results = _results(
        [
            (1, "t/test_x.py::test_1", "passed", 1.0, None),
            (2, "t/test_x.py::test_1", "failed", 1.0, None),
        ]
    )
    verdicts = reduce_matrix(results, runs)
    assert {v.verdict for v in verdicts} == {"insufficient-data"}


def test_flaky_value_is_not_an_outcome_difference():
    runs = _runs(
        [
            (1, "c1", {"python": "3.10"}, None, None),
            (2, "c1", {"python": "3.10"}, None, None),
            (3, "c1", {"python": "3.11"}, None, None),
        ]
    )
    results = _results(
        [
            (1, "t/test_f.py::test_1", "passed", 1.0, None),
            (2, "t/test_f.py::test_1", "failed", 1.0, None),
            (3, "t/test_f.py::test_1", "failed", 1.0, None),
        ]
    )
    verdict = _one(reduce_matrix(results, runs), "t/test_f.py", "python")
    assert verdict.verdict == "reduce"


def test_group_by_marker():
    results, runs = _python_history()
    verdicts = reduce_matrix(results, runs, group_by="marker")
    fast = _one(verdicts, "fast", "python")
    unmarked = _one(verdicts, "(unmarked)", "python")
    assert fast.verdict == unmarked.verdict == "reduce"
    assert fast.dropped_s == pytest.approx(2.5 + 2.1)
    assert unmarked.dropped_s == pytest.approx(1.2 + 0.9)


def test_bad_arguments():
    results, runs = _python_history()
    with pytest.raises(ValueError, match="group_by"):
        reduce_matrix(results, runs, group_by="suite")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="threshold"):
        reduce_matrix(results, runs, threshold=0.5)
    assert reduce_matrix(results.iloc[0:0], runs) == []
