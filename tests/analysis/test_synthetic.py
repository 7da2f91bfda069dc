"""The synthetic history: contract shape, the proportions of
docs/story.md#what-the-numbers-said, determinism."""

from __future__ import annotations

import itertools
from datetime import date
from typing import Any

import numpy as np
import pandas as pd
import pytest

from analysis.rollups.shares import rollup
from demo.synthetic import (
    AUGMIX_PARAMS,
    BACKBONE_FILE,
    MODELS_FILE,
    TRANSFORMS_FILE,
    generate_history,
    iter_history_chunks,
)
from model.frames import RESULT_COLUMNS, RUN_COLUMNS, facts_from_results

ARGS: dict[str, Any] = {"days": 2, "tests": 400, "jobs": 4, "seed": 3, "pipelines_per_day": 2}


@pytest.fixture(scope="module")
def history():
    return generate_history(**ARGS)


def test_frames_follow_the_contract(history):
    results, runs = history.results, history.runs
    assert list(results.columns) == [*RESULT_COLUMNS, "run_id"]
    assert list(runs.columns) == list(RUN_COLUMNS)
    assert len(runs) == 2 * 2 * 4
    assert len(results) == len(runs) * 400
    assert runs["run_id"].is_unique
    assert set(results["run_id"]) == set(runs["run_id"])
    assert results["nodeid"].nunique() == 400
    assert set(results["outcome"].astype(str)) <= {"passed", "failed", "error", "skipped"}
    assert (results["duration_s"] > 0).all()
    phases = results["setup_s"] + results["call_s"] + results["teardown_s"]
    np.testing.assert_allclose(phases, results["duration_s"])
    assert (results["peak_rss_mib"] > 0).all()
    # Repeated strings are categoricals: ten million rows must fit in memory.
    assert isinstance(results["nodeid"].dtype, pd.CategoricalDtype)


def test_runs_carry_labels_pipelines_and_machines(history):
    runs = history.runs
    for job, labels in zip(runs["job"], runs["labels"], strict=True):
        assert labels["os"] in {"linux", "macos", "windows"}
        assert "python" in labels
        assert ("cuda" in labels) == ("cuda" in job)
    assert set(runs["machine"]) == {"2xlarge+", "large", "windows.xlarge", "gpu.nvidia.medium"}
    per_pipeline = runs.groupby("pipeline")["job"].nunique()
    assert (per_pipeline == 4).all()
    assert len(per_pipeline) == 4  # 2 days x 2 pipelines
    assert runs.groupby("pipeline")["commit"].nunique().max() == 1
    assert runs["commit"].nunique() == 4
    days = pd.to_datetime(runs["started_at"]).dt.date
    assert set(days) == {date(2024, 1, 1), date(2024, 1, 2)}
    test_s = history.results.groupby("run_id")["duration_s"].sum()
    test_wall = runs["run_id"].map(test_s) / runs["xdist_workers"]
    assert (runs["wall_s"] > test_wall).all()  # wall = setup overhead + test wall


def test_file_shares_follow_the_story(history):
    facts = facts_from_results(history.results, history.runs)
    gpu = facts["job"].str.contains("cuda")
    cpu_files = {r["key"]: r["share"] for r in rollup(facts[~gpu], "file").to_records()}
    assert cpu_files[MODELS_FILE] == pytest.approx(0.34, abs=0.03)
    assert cpu_files[BACKBONE_FILE] == pytest.approx(0.28, abs=0.03)
    gpu_files = {r["key"]: r["share"] for r in rollup(facts[gpu], "file").to_records()}
    assert gpu_files[MODELS_FILE] == pytest.approx(0.61, abs=0.03)
    augmix = next(
        r for r in rollup(facts, "function").to_records()
        if r["key"] == f"{TRANSFORMS_FILE}::test_augmix"
    )  # fmt: skip
    assert augmix["tests"] == 96
    assert augmix["parent"] == TRANSFORMS_FILE
    assert augmix["parent_share"] == pytest.approx(0.843, abs=0.02)


def test_augmix_explodes_into_all_96_combinations(history):
    first_run = history.results[history.results["run_id"] == 1]
    augmix = first_run[first_run["function"] == "test_augmix"]
    assert len(augmix) == 96
    seen = {tuple(v[k] for k in AUGMIX_PARAMS) for v in augmix["param_values"]}
    assert seen == set(itertools.product(*AUGMIX_PARAMS.values()))
    assert all(
        nid.endswith(f"[{p}]")
        for nid, p in zip(augmix["nodeid"].astype(str), augmix["params"].astype(str), strict=True)
    )


def test_markers_flaky_failures_and_skips_are_present(history):
    results = history.results
    marker_sets = {tuple(m) for m in results["markers"]}
    assert {(), ("slow",), ("needs_cuda",), ("slow", "needs_cuda")} <= marker_sets
    flaky = results["flaky"]
    assert 0 < flaky.sum() < 0.01 * len(results)
    assert (results.loc[flaky, "attempts"] == 2).all()
    assert (results.loc[flaky, "outcome"] == "passed").all()
    failed = results["outcome"] == "failed"
    assert failed.sum() < 0.002 * len(results)
    # needs_cuda tests are skipped on CPU jobs only.
    cuda_runs = set(history.runs.loc[history.runs["job"].str.contains("cuda"), "run_id"])
    needs_cuda = results["markers"].map(lambda m: "needs_cuda" in m)
    on_gpu = results["run_id"].isin(cuda_runs)
    assert (results.loc[needs_cuda & ~on_gpu, "outcome"] == "skipped").all()
    assert not (results.loc[needs_cuda & on_gpu, "outcome"] == "skipped").any()


def test_same_seed_same_history_and_chunks_concatenate_to_it(history):
    again = generate_history(**ARGS)
    pd.testing.assert_frame_equal(again.results, history.results)
    pd.testing.assert_frame_equal(again.runs, history.runs)
    chunks = list(iter_history_chunks(**ARGS))
    assert len(chunks) == 2
    assert chunks[1].runs["run_id"].min() == chunks[0].runs["run_id"].max() + 1
    pd.testing.assert_frame_equal(
        pd.concat([c.results for c in chunks], ignore_index=True), history.results
    )
    other = generate_history(**{**ARGS, "seed": 4})
    assert not np.allclose(other.results["duration_s"], history.results["duration_s"])


def test_job_matrix_sizes_and_start_day():
    one = generate_history(days=1, tests=200, jobs=16, pipelines_per_day=1, start=date(2025, 5, 5))
    runs = one.runs
    assert runs["job"].nunique() == 16
    assert runs["job"].str.contains("cuda").sum() == 4
    assert {lab["os"] for lab in runs["labels"]} == {"linux", "macos", "windows"}
    assert set(pd.to_datetime(runs["started_at"]).dt.date) == {date(2025, 5, 5)}
    with pytest.raises(ValueError, match="tests must be at least"):
        generate_history(tests=50)
    with pytest.raises(ValueError, match="jobs must be between"):
        generate_history(jobs=17)
