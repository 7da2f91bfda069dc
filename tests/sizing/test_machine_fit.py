"""fit_machines on hand-built histories; every expected number is worked out in a comment."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from analysis.sizing.catalogue import load_catalogue_text, shipped_catalogues
from analysis.sizing.machine_fit import (
    COLLECT_MEMORY,
    JobSpec,
    fit_machines,
    job_specs,
    predict_wall_s,
    workers_on,
)
from analysis.split.plan import SplitOptions, plan_splits
from app.schemas import sizing as answers
from tests.sizing.factories import results_for, run_row, runs_frame

CIRCLECI = shipped_catalogues()["circleci"]
# Serial job: 60 s of tests, peaks 1000/3000/2000 MiB; wall 100 s -> 40 s setup.
SERIAL = {"a.py::t1": 10.0, "a.py::t2": 20.0, "b.py::t": 30.0}
SERIAL_PEAKS = {"a.py::t1": 1000.0, "a.py::t2": 3000.0, "b.py::t": 2000.0}


def serial_history(machine: str = "medium", peaks: bool = True, runs: int = 1):
    results = pd.concat(
        [results_for(r, SERIAL, SERIAL_PEAKS if peaks else None) for r in range(1, runs + 1)],
        ignore_index=True,
    )
    rows = [
        run_row(r, machine=machine, wall_s=100.0, started_at=f"2026-11-0{r}T00:00:00")
        for r in range(1, runs + 1)
    ]
    return runs_frame(rows), results


def test_headroom_sets_the_need_and_the_choice() -> None:
    runs, results = serial_history()
    job = fit_machines(runs, results, CIRCLECI).jobs[0]
    # 3000 MiB x 1.25 = 3750 <= medium's 4096 MiB; small (2048) is too small.
    assert job.memory_source == "per-test"
    assert job.need_mib == 3750.0
    assert job.recommended is not None
    assert job.recommended.name == "medium"
    assert job.advice.startswith("keep medium")
    # 3000 x 1.5 = 4500 > 4096: medium+ (6 GiB) is the cheapest that fits.
    bigger = fit_machines(runs, results, CIRCLECI, headroom=1.5).jobs[0]
    assert bigger.need_mib == 4500.0
    assert bigger.recommended is not None
    assert bigger.recommended.name == "medium+"
    # 10 credits/min x $0.0006 x 100/60 min = $0.01; medium+ 15 credits -> $0.015.
    assert bigger.cost_per_run == pytest.approx(0.01)
    assert bigger.recommended_cost_per_run == pytest.approx(0.015)
    assert bigger.saving_per_run == pytest.approx(-0.005)


def test_headroom_below_one_is_refused() -> None:
    runs, results = serial_history()
    with pytest.raises(ValueError, match="headroom"):
        fit_machines(runs, results, CIRCLECI, headroom=0.9)


def test_which_tests_set_the_peak() -> None:
    runs, results = serial_history()
    job = fit_machines(runs, results, CIRCLECI).jobs[0]
    assert job.peak_tests == (("a.py::t2", 3000.0), ("b.py::t", 2000.0), ("a.py::t1", 1000.0))


def test_serial_job_wall_ignores_vcpus() -> None:
    runs, results = serial_history(machine="2xlarge")
    job = fit_machines(runs, results, CIRCLECI).jobs[0]
    # Setup = 100 - 60 = 40 s; one worker everywhere, so every entry predicts 100 s.
    assert job.overhead_s == 40.0
    assert {p.wall_s for p in job.predictions} == {100.0}
    assert any("extra cores are waste" in note for note in job.notes)
    # Nothing forces 16 vCPUs: the cheapest entry fitting 3750 MiB is medium.
    assert job.recommended is not None
    assert job.recommended.name == "medium"
    assert job.advice.startswith("downsize to medium")
    # 2xlarge 80 credits -> $0.08 per run; medium $0.01: 12.5%, shown as 12%.
    assert job.cost_per_run == pytest.approx(0.08)
    assert "12% of today's cost" in job.advice


# Parallel job: 100 s of tests (longest 40 s), 4 workers on large (4 vCPU, auto), wall 95 s.
PARALLEL = {"a.py::t1": 10.0, "a.py::t2": 20.0, "b.py::t": 30.0, "c.py::t": 40.0}
PARALLEL_PEAKS = dict.fromkeys(PARALLEL, 1000.0)


def parallel_history(peaks: bool = True):
    results = results_for(1, PARALLEL, PARALLEL_PEAKS if peaks else None)
    runs = runs_frame([run_row(1, machine="large", wall_s=95.0, workers=4)])
    return runs, results


def test_amdahl_predictions() -> None:
    runs, results = parallel_history()
    job = fit_machines(runs, results, CIRCLECI).jobs[0]
    # 95 = setup + 40 + 60/4 -> setup 40 s.
    assert job.overhead_s == 40.0
    assert job.chain_s == 40.0
    walls = {p.machine: (p.workers, p.wall_s) for p in job.predictions}
    assert walls["large"] == (4, 95.0)
    assert walls["medium"] == (2, 110.0)  # 40 + 40 + 60/2
    assert walls["xlarge"] == (8, 87.5)  # 40 + 40 + 60/8
    assert walls["small"] == (1, 140.0)  # 40 + 100
    within = {p.machine for p in job.predictions if p.within_wait}
    assert within == {"large", "xlarge", "2xlarge", "2xlarge+"}


def test_xdist_workers_multiply_per_test_peaks() -> None:
    runs, results = parallel_history()
    job = fit_machines(runs, results, CIRCLECI).jobs[0]
    need = {p.machine: p.need_mib for p in job.predictions}
    # 1000 MiB per worker x workers x 1.25.
    assert job.need_mib == 5000.0
    assert need["large"] == 5000.0
    assert need["medium"] == 2500.0
    assert need["xlarge"] == 10000.0
    # large fits (5000 <= 8192) and is the cheapest within the 95 s wait.
    assert job.recommended is not None
    assert job.recommended.name == "large"


def test_fixed_workers_are_capped_not_raised() -> None:
    runs, results = parallel_history()
    runs["machine"] = "xlarge"  # 8 vCPUs, 4 workers: -n 4, not auto
    runs["wall_s"] = 95.0
    job = fit_machines(runs, results, CIRCLECI).jobs[0]
    walls = {p.machine: p.workers for p in job.predictions}
    assert walls["2xlarge+"] == 4
    assert walls["medium"] == 2


def test_no_memory_data_no_advice() -> None:
    runs, results = parallel_history(peaks=False)
    job = fit_machines(runs, results, CIRCLECI).jobs[0]
    assert job.memory_source is None
    assert job.recommended is None
    assert job.advice == COLLECT_MEMORY
    assert "--laptime-report" in job.advice
    assert "peak_rss_mib" in job.advice
    assert all(p.fits_memory is None for p in job.predictions)


def test_job_level_peak_is_used_without_multiplying() -> None:
    runs, results = parallel_history(peaks=False)
    runs["peak_rss_mib"] = 6000.0
    job = fit_machines(runs, results, CIRCLECI).jobs[0]
    assert job.memory_source == "job"
    # 6000 x 1.25 = 7500 on every machine: large (8192 MiB) fits, medium (4096) does not.
    assert {p.need_mib for p in job.predictions} == {7500.0}
    assert job.recommended is not None
    assert job.recommended.name == "large"


def test_unknown_machine_is_reported_never_priced_at_zero() -> None:
    runs, results = serial_history(machine="weird-box")
    report = fit_machines(runs, results, CIRCLECI)
    job = report.jobs[0]
    assert report.unknown_machines == ("weird-box",)
    assert job.current is None
    assert job.cost_per_run is None
    assert job.saving_per_run is None
    assert any("weird-box" in note for note in job.notes)
    assert report.jobs[0].current is None


def test_monthly_cost_uses_the_observed_run_rate() -> None:
    runs, results = serial_history(runs=3)
    job = fit_machines(runs, results, CIRCLECI).jobs[0]
    # 3 runs from Nov 1 to Nov 3 (2 days): 1.5 runs/day, x 30 = 45 runs a month at $0.01.
    assert job.runs_per_day == pytest.approx(1.5)
    assert job.cost_per_month == pytest.approx(0.45)


def test_wait_target_override() -> None:
    runs, results = parallel_history()
    # Allow 110 s: medium (2 workers, 110 s, 2500 MiB) becomes the cheapest.
    job = fit_machines(runs, results, CIRCLECI, wait_target_s=110.0).jobs[0]
    assert job.recommended is not None
    assert job.recommended.name == "medium"
    assert job.recommended_wall_s == 110.0


def test_credit_only_catalogue_reports_in_credits() -> None:
    gitlab = shipped_catalogues()["gitlab"]
    runs, results = serial_history(machine="saas-linux-medium-amd64")
    report = fit_machines(runs, results, gitlab)
    job = report.jobs[0]
    assert report.unit == "compute minutes"
    # Cost factor 2 x 100/60 min; small (8 GB, factor 1) fits 3750 MiB and halves it.
    assert job.cost_per_run == pytest.approx(2 * 100 / 60)
    assert job.recommended is not None
    assert job.recommended.name == "saas-linux-small-amd64"


def test_planned_jobs_from_the_split_planner() -> None:
    runs, results = serial_history()
    options = SplitOptions(jobs=(2, 2), granularity="file", max_machine_per_wait=10.0)
    plan = plan_splits(results, runs, options)
    assert plan.verdict == "split"
    specs = job_specs(plan.jobs)
    assert sorted(s.members for s in specs) == [("a.py",), ("b.py",)]
    report = fit_machines(runs, results, CIRCLECI, jobs=specs)
    by_members = {j.members: j for j in report.jobs}
    # a.py's peak is t2's 3000 MiB, b.py's 2000 MiB; x 1.25 each.
    assert by_members[("a.py",)].need_mib == 3750.0
    assert by_members[("b.py",)].need_mib == 2500.0
    assert by_members[("b.py",)].peak_tests == (("b.py::t", 2000.0),)
    # Both are 30 s of tests plus the 40 s setup the planner measured.
    assert {j.wall_s for j in report.jobs} == {70.0}


def test_members_match_files_classes_and_nodeids() -> None:
    durations = {"x.py::C::t1": 5.0, "x.py::C::t2": 5.0, "x.py::t3": 5.0, "y.py::t": 5.0}
    peaks = {"x.py::C::t1": 100.0, "x.py::C::t2": 200.0, "x.py::t3": 300.0, "y.py::t": 400.0}
    results = results_for(1, durations, peaks)
    runs = runs_frame([run_row(1, wall_s=30.0)])
    specs = [JobSpec("class", members=("x.py::C",)), JobSpec("mixed", members=("y.py", "x.py::t3"))]
    report = fit_machines(runs, results, CIRCLECI, jobs=specs)
    cls, mixed = report.jobs
    assert cls.test_s == 10.0
    assert cls.peak_mib == 200.0
    assert mixed.test_s == 10.0
    assert mixed.peak_mib == 400.0


def test_user_catalogue_changes_the_answer() -> None:
    runs, results = serial_history()
    cheap = load_catalogue_text(
        """
        [catalogue]
        name = "mine"
        [[machine]]
        name = "fat"
        os = "linux"
        arch = "x64"
        vcpus = 1
        memory_gib = 64
        usd_per_min = 0.001
        source = "https://example.com/prices"
        as_of = "2026-12-01"
        [[machine]]
        name = "medium"
        os = "linux"
        arch = "x64"
        vcpus = 2
        memory_gib = 4
        usd_per_min = 0.006
        source = "https://example.com/prices"
        as_of = "2026-12-01"
        """,
        source="mine.toml",
    )
    job = fit_machines(runs, results, cheap).jobs[0]
    assert job.recommended is not None
    assert job.recommended.name == "fat"
    # $0.006 x 100/60 -> $0.01 today; $0.001 x 100/60 on fat.
    assert job.saving_per_run == pytest.approx(0.005 * 100 / 60)


def test_report_is_json_ready() -> None:
    runs, results = parallel_history()
    data = json.loads(
        answers.SizingReport.of(fit_machines(runs, results, CIRCLECI)).model_dump_json(
            exclude_unset=True
        )
    )
    text = json.dumps(data)
    assert json.loads(text)["jobs"][0]["recommended"] == "large"
    assert data["unit"] == "USD"
    assert data["wait_s"] == 95.0


def test_model_helpers() -> None:
    assert workers_on(20, 20, auto=True) == 20
    assert workers_on(8, 20, auto=True) == 8
    assert workers_on(20, 4, auto=False) == 4
    assert workers_on(2.5, 4, auto=False) == 2
    assert workers_on(32, 1, auto=True) == 1
    # The chain can never exceed the test time.
    assert predict_wall_s(10.0, 30.0, 50.0, 4) == 40.0
