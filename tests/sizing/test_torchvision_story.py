"""torchvision's story (docs/story.md#what-the-numbers-said): after the split, the non-model
job fits a class half the price.

History: one Linux job on CircleCI 2xlarge+ (20 vCPU / 40 GB) running pytest -n auto (20
workers), three runs over two days. The model files hold 24,000 s of tests and peak at
1,536 MiB per worker (30 GiB over 20 workers); the other files hold 8,000 s and peak at
400 MiB per worker (7.8 GiB). Setup takes 300 s.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.sizing.catalogue import Catalogue, shipped_catalogues
from analysis.sizing.machine_fit import JobSpec, fit_machines
from app.schemas import sizing as answers
from tests.sizing.factories import results_for, run_row, runs_frame

MODEL_FILES = ("test/test_models.py", "test/test_backbone_utils.py")
OTHER_FILES = tuple(f"test/test_other_{i}.py" for i in range(8))
SETUP_S = 300.0
WORKERS = 20


def story_history() -> tuple[pd.DataFrame, pd.DataFrame]:
    durations: dict[str, float] = {}
    peaks: dict[str, float] = {}
    # 2 model files x 120 tests x 100 s = 24,000 s; 8 files x 100 tests x 10 s = 8,000 s.
    for f in MODEL_FILES:
        for i in range(120):
            durations[f"{f}::test_model[{i}]"] = 100.0
            peaks[f"{f}::test_model[{i}]"] = 1536.0
    for f in OTHER_FILES:
        for i in range(100):
            durations[f"{f}::test_op[{i}]"] = 10.0
            peaks[f"{f}::test_op[{i}]"] = 400.0
    test_s = sum(durations.values())
    # Amdahl wall: setup + longest test + rest / 20 = 300 + 100 + 31,900 / 20 = 1,995 s.
    wall = SETUP_S + 100.0 + (test_s - 100.0) / WORKERS
    results = pd.concat([results_for(r, durations, peaks) for r in (1, 2, 3)], ignore_index=True)
    runs = runs_frame(
        [
            run_row(
                r,
                job="linux",
                machine="2xlarge+",
                wall_s=wall,
                workers=WORKERS,
                started_at=f"2026-11-0{r}T12:00:00",
            )
            for r in (1, 2, 3)
        ]
    )
    return runs, results


def test_before_the_split_the_big_class_is_needed() -> None:
    runs, results = story_history()
    report = fit_machines(runs, results, shipped_catalogues()["circleci"])
    (job,) = report.jobs
    # 1,536 MiB x 20 workers x 1.25 = 38,400 MiB <= 40 GiB; the peak is set by model tests.
    assert job.need_mib == pytest.approx(38400.0)
    assert all(n.startswith(MODEL_FILES) for n, _ in job.peak_tests)
    assert job.wall_s == pytest.approx(1995.0)
    assert job.recommended is not None
    assert job.recommended.name == "2xlarge+"


def test_after_the_split_the_other_job_halves_its_price() -> None:
    runs, results = story_history()
    circleci = shipped_catalogues()["circleci"]
    jobs = [JobSpec("models", members=MODEL_FILES), JobSpec("others", members=OTHER_FILES)]
    report = fit_machines(runs, results, circleci, jobs=jobs)
    models, others = report.jobs

    # Models: 300 + 100 + 23,900 / 20 = 1,595 s on 2xlarge+, the pipeline's critical path.
    assert models.wall_s == pytest.approx(1595.0)
    assert report.wait_s == pytest.approx(1595.0)
    # 2xlarge (16 workers: 30,720 MiB fits 32 GiB) would take 300 + 100 + 23,900/16 = 1,894 s.
    assert models.recommended is not None
    assert models.recommended.name == "2xlarge+"

    # Others: 400 MiB x 8 workers x 1.25 = 4,000 MiB on xlarge; 300 + 10 + 7,990 / 8 = 1,308.75 s.
    assert others.recommended is not None
    assert others.recommended.name == "xlarge"
    assert others.recommended_wall_s == pytest.approx(1308.75)
    assert others.cost_per_run is not None
    assert others.recommended_cost_per_run is not None
    # The class: xlarge 40 credits a minute vs 2xlarge+ 100, 40% of the price.
    assert price_ratio(circleci, "xlarge", "2xlarge+") <= 0.5
    # Per run it runs longer on 8 workers, so the run costs less but not half:
    # today 300 + 10 + 7,990 / 20 = 709.5 s x $0.06/min = $0.7095; xlarge 1,308.75 s x $0.024.
    assert others.cost_per_run == pytest.approx(0.7095)
    assert others.recommended_cost_per_run == pytest.approx(0.5235)
    assert others.saving_per_month is not None
    assert others.saving_per_month > 0

    # The wait does not grow: the model job stays the critical path.
    assert report.wait_after_s <= report.wait_s + 1e-9
    data = json.loads(answers.SizingReport.of(report).model_dump_json(exclude_unset=True))
    assert data["saving_per_month"] > 0


def price_ratio(catalogue: Catalogue, a: str, b: str) -> float:
    rate_a = catalogue.rate_per_min(catalogue.get(a))
    rate_b = catalogue.rate_per_min(catalogue.get(b))
    assert rate_a is not None
    assert rate_b is not None
    return rate_a / rate_b
