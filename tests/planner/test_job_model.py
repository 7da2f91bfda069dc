"""The job model on hand-built histories whose parts are known; each number is worked out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest

from analysis.sizing.catalogue import load_catalogue_text
from analysis.sizing.machine_fit import fit_machines, platform_os_arch
from analysis.split.job_model import (
    EXIT_FIXED_SHARE,
    EXIT_TAIL_DEFAULT_S,
    MODEL_INPUTS,
    JobModel,
    fit_job_model,
    missing_inputs_note,
    parallel_profile,
    quiet_wall,
)
from analysis.split.plan import SplitOptions, plan_splits
from ingest.model import results_frame
from tests.planner.history import one_job, run_row, runs_frame
from tests.sizing.test_catalogue import ENTRY, user_text

# (nodeid, setup_s, call_s, cpu_s or None); listed in execution order (seq).
Test = tuple[str, float, float, float | None]


def measured(
    run_id: int,
    tests: Sequence[Test],
    *,
    share: float = 1.0,
    startup_s: float | None = 0.7,
    collect_by_file: dict[str, float] | None = None,
    bookkeeping_s: float = 0.5,
    ci_setup_s: float | None = 30.0,
    workers: int = 1,
    machine: str = "linux",
    malloc: str | None = "pinned",
    exit_s: float | None = 0.8,
    job: str = "test",
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One plugin run: walls are the quiet times slowed by `share` (CPU part only)."""
    walls = []
    for _n, setup, call, cpu in tests:
        quiet = setup + call
        # CPU work took cpu / share instead of cpu on the busy machine; the rest (I/O) did not.
        walls.append(quiet if cpu is None else quiet + min(cpu, quiet) * (1 / share - 1))
    scale = [w / (s + c) if s + c else 1.0 for w, (_n, s, c, _p) in zip(walls, tests, strict=True)]
    results = results_frame(
        {
            "nodeid": [t[0] for t in tests],
            "file": [t[0].split("::")[0] for t in tests],
            "function": [t[0].split("::")[-1] for t in tests],
            "outcome": ["passed"] * len(tests),
            "duration_s": walls,
            "setup_s": [t[1] * k for t, k in zip(tests, scale, strict=True)],
            "call_s": [t[2] * k for t, k in zip(tests, scale, strict=True)],
        }
    )
    results["cpu_s"] = [float("nan") if t[3] is None else t[3] for t in tests]
    # The kernel's run-queue delay: exactly the time the busy machine added.
    results["cpu_wait_s"] = [w - (t[1] + t[2]) for w, t in zip(walls, tests, strict=True)]
    results["seq"] = list(range(len(tests)))
    results["run_id"] = run_id
    by_file = collect_by_file or {}
    collect = sum(by_file.values()) if by_file else float("nan")
    wall = (0.0 if not by_file else collect) + sum(walls) / workers + bookkeeping_s
    row: dict[str, Any] = run_row(run_id, job=job, wall_s=wall, workers=workers, machine=machine)
    cpus = [t[3] for t in tests]
    row["cpu_s"] = float("nan") if None in cpus else sum(c or 0.0 for c in cpus) + 0.0
    row["startup_s"] = float("nan") if startup_s is None else startup_s
    row["collect_s"] = collect
    row["collect_by_file"] = by_file or None
    row["collected_tests"] = len(tests)
    row["collected_files"] = len({t[0].split("::")[0] for t in tests})
    row["job_wall_s"] = (
        float("nan") if ci_setup_s is None else ci_setup_s + (startup_s or 0.0) + wall
    )
    row["invocation"] = "paths"
    # The plugin fixed glibc's thresholds: a fresh job process allocates as the history did.
    row["malloc"] = malloc
    # Session end to process exit, as `laptime-ci run` measures it (None: not run under it).
    row["exit_s"] = float("nan") if exit_s is None else exit_s
    # A heap census whose tests leave nothing behind: no test here walks the heap.
    heap = {"heap_objects_start": 1e4, "heap_objects_collected": 2e4, "heap_objects_end": 2e4}
    row.update(heap)
    runs = runs_frame([row])
    for key in (
        "cpu_s",
        "startup_s",
        "collect_s",
        "collect_by_file",
        "job_wall_s",
        "exit_s",
        *heap,
    ):
        runs[key] = [row[key]]
    return results, runs


# a.py's first test pays 2 s of first use (setup 3 s against the others' 1 s).
PARTS: list[Test] = [
    ("a.py::t1", 3.0, 1.0, 4.0),
    ("a.py::t2", 1.0, 1.0, 2.0),
    ("a.py::t3", 1.0, 1.0, 2.0),
    ("b.py::t1", 0.0, 5.0, 5.0),
    ("b.py::t2", 0.0, 5.0, 5.0),
]
COLLECT = {"a.py": 0.5, "b.py": 1.5}


def test_predicted_parts_equal_the_constructed_ones() -> None:
    results, runs = measured(1, PARTS, collect_by_file=COLLECT)
    model = fit_job_model(results, runs)
    assert model.inputs_missing == ()
    whole = model.predict(files=["a.py", "b.py"], n_tests=5, test_s=16.0, workers=1, overhead_s=0.0)
    # Tests 18 s minus a.py's 2 s first use, + 0.5 s bookkeeping over 5 tests.
    assert whole.ci_setup_s == pytest.approx(30.0)
    assert whole.startup_s == pytest.approx(0.7)
    assert whole.collect_s == pytest.approx(2.0)
    assert whole.first_use_s == pytest.approx(2.0)
    assert whole.tests_s == pytest.approx(16.5)
    assert whole.exit_s == pytest.approx(0.8)
    # ...which adds up to the job wall the history measured: 30 + 0.7 + 2 + 18 + 0.5, taken
    # at the session's end, and the exit tail after it.
    assert whole.wall_s == pytest.approx(runs["job_wall_s"].iloc[0] + 0.8)
    only_a = model.predict(files=["a.py"], n_tests=3, test_s=6.0, workers=1, overhead_s=0.0)
    assert only_a.collect_s == pytest.approx(0.5)
    assert only_a.first_use_s == pytest.approx(2.0)
    assert only_a.tests_s == pytest.approx(6.0 + 0.1 * 3)
    factored = fit_job_model(results, runs, setup_factor=2.0, test_factor=0.5).predict(
        files=["a.py"], n_tests=3, test_s=6.0, workers=1, overhead_s=0.0
    )
    assert factored.ci_setup_s == pytest.approx(60.0)
    assert factored.first_use_s == pytest.approx(4.0)
    assert factored.tests_s == pytest.approx(3.15)


def test_plans_carry_the_parts_and_the_single_job_matches_its_history() -> None:
    results, runs = measured(1, PARTS, collect_by_file=COLLECT)
    plan = plan_splits(results, runs, SplitOptions(jobs=(2, 2), min_gain_frac=0.0))
    (today,) = plan.before_jobs
    assert today.parts is not None
    assert today.wall_s == pytest.approx(runs["job_wall_s"].iloc[0] + 0.8)
    assert today.parts.first_use_s == pytest.approx(2.0)
    assert plan.inputs_missing == ()
    for job in plan.jobs:
        assert job.parts is not None
        assert job.wall_s == pytest.approx(job.parts.wall_s)
        assert job.overhead_s == pytest.approx(job.parts.fixed_s)


def test_junit_only_gives_todays_numbers_and_names_what_it_lacked() -> None:
    results, runs = one_job({"a.py::t": 60.0, "b.py::t": 40.0}, overhead_s=10.0)
    plan = plan_splits(results, runs, SplitOptions(jobs=(2, 2)))
    (today,) = plan.before_jobs
    assert today.overhead_s == 10.0
    assert today.wall_s == 110.0
    assert [job.wall_s for job in plan.jobs] == [70.0, 50.0]
    assert plan.inputs_missing == MODEL_INPUTS
    assert today.parts is not None
    assert today.parts.inputs_missing == MODEL_INPUTS
    assert today.parts.ci_setup_s == 10.0


def _first_use_plan(first_use_s: float) -> list[tuple[str, ...]]:
    # big.py: 10 tests of 10 s, its first one also pays `first_use_s`; small.py: one 20 s test.
    tests: list[Test] = [("big.py::t0", first_use_s + 1.0, 9.0, None)]
    tests += [(f"big.py::t{i}", 1.0, 9.0, None) for i in range(1, 10)]
    tests.append(("small.py::t", 0.0, 20.0, None))
    results, runs = measured(
        1,
        tests,
        collect_by_file={"big.py": 0.0, "small.py": 0.0},
        bookkeeping_s=0.0,
        ci_setup_s=0.0,
        startup_s=0.0,
    )
    plan = plan_splits(results, runs, SplitOptions(jobs=(2, 2), min_gain_frac=0.0))
    assert plan.verdict == "split"
    return [job.members for job in plan.jobs]


def test_a_file_with_a_big_first_use_stays_whole_when_splitting_does_not_pay() -> None:
    # Whole: 100 + 40 = 140 s vs 20 s. Split in two: 50 + 40 each, wait ~100 s at best, saving
    # 40 s for 40 s more machine time: not worth paying the first use twice.
    members = _first_use_plan(40.0)
    assert ("big.py",) in members


def test_a_file_is_split_when_it_pays_even_after_its_first_use_twice() -> None:
    # Whole: 104 s vs 20 s. Split: 50 + 4 each; the wait drops by ~40 s for 4 s more machine.
    members = _first_use_plan(4.0)
    jobs_with_big = [m for m in members if any(x.startswith("big.py::") for x in m)]
    assert len(jobs_with_big) == 2


@pytest.mark.parametrize("share", [0.5, 1.0])
def test_a_busy_history_predicts_the_same_quiet_time_for_cpu_bound_tests(share: float) -> None:
    results, runs = measured(1, PARTS, collect_by_file=COLLECT, share=share)
    if share < 1.0:
        # The busy run's walls really are longer: the model must undo that, not copy it.
        assert results["duration_s"].sum() == pytest.approx(36.0)
    model = fit_job_model(results, runs)
    assert model.cpu_share == pytest.approx(share)
    plan = plan_splits(results, runs, SplitOptions(jobs=(1, 1)))
    (today,) = plan.before_jobs
    assert today.parts is not None
    assert today.parts.tests_s == pytest.approx(16.5)
    assert today.parts.first_use_s == pytest.approx(2.0)


def test_an_io_bound_test_is_not_scaled_by_the_cpu_share() -> None:
    tests: list[Test] = [("a.py::cpu", 0.0, 4.0, 4.0), ("a.py::sleep", 0.0, 3.0, 0.01)]
    results, runs = measured(1, tests, share=0.5, collect_by_file={"a.py": 0.1})
    # The CPU test took 8 s at half a core; the sleep test 3.01 s.
    walls = dict(zip(results["nodeid"], results["duration_s"], strict=True))
    assert walls["a.py::cpu"] == pytest.approx(8.0)
    model = fit_job_model(results, runs)
    adjusted = dict(zip(model.results["nodeid"], model.results["duration_s"], strict=True))
    assert adjusted["a.py::cpu"] == pytest.approx(4.0)
    assert adjusted["a.py::sleep"] == pytest.approx(3.0, abs=0.02)


def test_quiet_wall_formula() -> None:
    wall = pd.Series([2.0, 3.0, 3.0, 1.0])
    cpu = pd.Series([1.0, 1.0, 0.0, float("nan")])
    share = pd.Series([0.5, 0.5, 0.5, 0.5])
    # CPU-bound: its cpu; mixed 1 s CPU + 1 s I/O at half a core: 2 s; sleep: as is; unknown: as is.
    assert quiet_wall(wall, cpu, share).tolist() == pytest.approx([1.0, 2.0, 3.0, 1.0])


def test_amdahl_a_four_core_test_takes_about_twice_as_long_on_two_cores() -> None:
    # 10 s wall, 40 s CPU on an 8-core history machine: u = 4, p = (1 - 1/4) / (1 - 1/8) = 6/7;
    # on 2 cores: 40 x (1/7 + (6/7) / 2) = 22.9 s, ~2.3x; on 8 or more cores: as measured.
    profile = parallel_profile(pd.Series([10.0]), pd.Series([40.0]), 8.0)
    assert profile.parallel
    assert profile.scale(8.0) == pytest.approx(1.0)
    assert profile.scale(16.0) == pytest.approx(1.0)
    assert profile.scale(2.0) == pytest.approx(40.0 * (1 / 7 + 3 / 7) / 10.0)
    assert 1.9 < profile.scale(2.0) < 2.4
    serial = parallel_profile(pd.Series([10.0]), pd.Series([9.0]), 8.0)
    assert not serial.parallel
    assert serial.scale(1.0) == 1.0


# Same price per minute: the cheaper per run is the faster or, on a tie, the smaller one.
CATALOGUE = load_catalogue_text(
    user_text(ENTRY.format(name="two", vcpus=2), ENTRY.format(name="eight", vcpus=8)),
    source="test",
)


def test_machine_fit_slows_a_threaded_job_on_fewer_vcpus_but_not_a_serial_one() -> None:
    threaded = [("a.py::blas", 0.0, 100.0, 400.0)]
    results, runs = measured(1, threaded, machine="eight", collect_by_file={"a.py": 0.0})
    results["peak_rss_mib"] = 100.0
    fit = fit_machines(runs, results, CATALOGUE).jobs[0]
    walls = {p.machine: p.wall_s for p in fit.predictions}
    overhead = fit.overhead_s
    # 100 s of tests at u = 4 on 8 cores: ~229 s on two.
    assert walls["eight"] - overhead == pytest.approx(100.0, rel=1e-6)
    assert (walls["two"] - overhead) / 100.0 == pytest.approx(40.0 * (1 / 7 + 3 / 7) / 10.0)
    assert fit.max_cores_used == pytest.approx(4.0)
    assert any("slow down" in note for note in fit.notes)
    serial = [("a.py::t", 0.0, 100.0, 99.0)]
    results, runs = measured(1, serial, machine="eight", collect_by_file={"a.py": 0.0})
    results["peak_rss_mib"] = 100.0
    fit = fit_machines(runs, results, CATALOGUE).jobs[0]
    walls = {p.machine: p.wall_s for p in fit.predictions}
    assert walls["two"] == pytest.approx(walls["eight"])
    assert fit.recommended is not None
    assert fit.recommended.name == "two"
    assert any("extra cores are waste" in note for note in fit.notes)


def test_each_job_keeps_its_own_ci_setup() -> None:
    cpu_results, cpu_runs = measured(1, PARTS[:3], collect_by_file=COLLECT, ci_setup_s=30.0)
    gpu_results, gpu_runs = measured(2, PARTS[3:], collect_by_file=COLLECT, ci_setup_s=300.0)
    cpu_runs["job"], gpu_runs["job"] = "cpu", "gpu"
    results = pd.concat([cpu_results, gpu_results], ignore_index=True)
    runs = pd.concat([cpu_runs, gpu_runs], ignore_index=True)
    runs["pipeline"] = "p1"
    plan = plan_splits(results, runs, SplitOptions(jobs=(2, 2)))
    setups = {job.name: job.parts.ci_setup_s for job in plan.before_jobs if job.parts}
    assert setups == {"cpu": pytest.approx(30.0), "gpu": pytest.approx(300.0)}


def test_run_queue_wait_is_taken_out_even_where_threads_hide_contention() -> None:
    """With `cpu_wait_s` a test's quiet wall is its wall minus its wait, threads or not; without
    it a test using 2 cores caps the estimated share at 1 and nothing is corrected."""
    tests: list[Test] = [("a.py::blas", 0.0, 2.0, 4.0), ("a.py::loop", 0.0, 2.0, 2.0)]
    results, runs = measured(1, tests, collect_by_file={"a.py": 0.1})
    # Recorded at load: each test waited 1 s of its 3 s for a CPU.
    results["duration_s"] = [3.0, 3.0]
    results["call_s"] = [3.0, 3.0]
    results["cpu_wait_s"] = [1.0, 1.0]
    model = fit_job_model(results, runs)
    assert model.results["duration_s"].tolist() == pytest.approx([2.0, 2.0])
    assert model.cpu_share == pytest.approx(1 - 2.0 / 6.0)
    assert "cpu_wait_s" not in model.inputs_missing
    blind = fit_job_model(results.drop(columns=["cpu_wait_s"]), runs)
    assert blind.results["duration_s"].tolist() == pytest.approx([3.0, 3.0])
    assert blind.cpu_share == pytest.approx(1.0)
    assert "cpu_wait_s" in blind.inputs_missing


def _malloc_history(*states: str | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One run per allocator state, each the same PARTS history."""
    pairs = [
        measured(i, PARTS, collect_by_file=COLLECT, malloc=state)
        for i, state in enumerate(states, start=1)
    ]
    results = pd.concat([r for r, _ in pairs], ignore_index=True)
    return results, pd.concat([runs for _, runs in pairs], ignore_index=True)


@pytest.mark.parametrize(
    "states",
    [("pinned", "pinned"), ("pinned", "environment"), ("other",), ("environment", "other")],
)
def test_allocator_fixed_in_every_run_is_not_missing(states: tuple[str, ...]) -> None:
    """Thresholds fixed (by the plugin or the environment) or no glibc: a fresh job process's
    allocations cost what they cost in the history."""
    results, runs = _malloc_history(*states)
    assert "malloc" not in fit_job_model(results, runs).inputs_missing


@pytest.mark.parametrize(
    "states", [("pinned", "dynamic"), ("dynamic",), ("pinned", None), (None, None)]
)
def test_a_run_under_dynamic_or_unknown_malloc_makes_it_missing(
    states: tuple[str | None, ...],
) -> None:
    """glibc's dynamic mmap threshold: what a fresh process page-faults the history process may
    have served from its heap (docs/benchmarks.md), so the model names the input it lacks."""
    results, runs = _malloc_history(*states)
    model = fit_job_model(results, runs)
    assert "malloc" in model.inputs_missing
    assert model.inputs_missing == ("malloc",)  # everything else was measured
    plan = plan_splits(results, runs, SplitOptions(jobs=(2, 2), min_gain_frac=0.0))
    assert plan.inputs_missing == ("malloc",)
    assert all(job.parts and job.parts.inputs_missing == ("malloc",) for job in plan.jobs)


def test_a_history_without_the_malloc_column_lacks_it() -> None:
    results, runs = _malloc_history("pinned")
    assert "malloc" in fit_job_model(results, runs.drop(columns=["malloc"])).inputs_missing


def test_collection_outside_any_file_is_paid_by_every_job() -> None:
    """conftest imports and the directory walk are in collect_s but in no file's time: each job
    collects them again, so each job's collection is its own files' plus that remainder."""
    results, runs = measured(1, PARTS, collect_by_file=COLLECT)
    runs["collect_s"] = sum(COLLECT.values()) + 0.4
    runs["wall_s"] += 0.4
    runs["job_wall_s"] += 0.4
    model = fit_job_model(results, runs)
    assert model.collect_outside_files_s == pytest.approx(0.4)
    whole = model.predict(files=["a.py", "b.py"], n_tests=5, test_s=16.0, workers=1, overhead_s=0.0)
    assert whole.collect_s == pytest.approx(2.4)
    assert whole.wall_s == pytest.approx(runs["job_wall_s"].iloc[0] + 0.8)
    only_a = model.predict(files=["a.py"], n_tests=3, test_s=6.0, workers=1, overhead_s=0.0)
    assert only_a.collect_s == pytest.approx(0.5 + 0.4)


def test_short_tests_do_not_show_cores_their_cpu_ticks_invent() -> None:
    # Linux accounts CPU time in scheduler ticks (4 ms at HZ=250): in a real networkx history
    # 245 of 6,841 tests read 2-85x their wall (0.3 ms of wall, 4.4 ms of CPU) and the sizing
    # believed an 86-core history machine, so it sent a serial job to a 96-vCPU runner.
    ticks = [(f"a.py::t{i}", 0.0, 0.0003, 0.0044 * (i % 2)) for i in range(200)]
    serial = [("b.py::slow", 0.0, 20.0, 19.9)]
    results, runs = measured(
        1, [*ticks, *serial], machine="unknown", collect_by_file={"a.py": 0.0, "b.py": 0.0}
    )
    results["peak_rss_mib"] = 100.0
    profile = parallel_profile(results["call_s"], results["cpu_s"], None)
    assert not profile.parallel
    assert profile.max_cores_used == 1.0
    fit = fit_machines(runs, results, CATALOGUE).jobs[0]
    walls = {p.machine: p.wall_s for p in fit.predictions}
    assert walls["two"] == pytest.approx(walls["eight"])
    assert fit.recommended is not None
    assert fit.recommended.name == "two"


def test_a_long_threaded_test_still_shows_its_cores_beside_short_ones() -> None:
    ticks = [(f"a.py::t{i}", 0.0, 0.0003, 0.0044) for i in range(50)]
    blas = [("b.py::blas", 0.0, 10.0, 19.8)]
    results, _ = measured(1, [*ticks, *blas], collect_by_file={"a.py": 0.0, "b.py": 0.0})
    profile = parallel_profile(results["call_s"], results["cpu_s"], None)
    assert profile.parallel
    assert profile.max_cores_used == pytest.approx(1.98)
    assert profile.history_cores == 2.0


def test_an_unnamed_machine_is_replaced_on_the_os_and_arch_the_history_ran_on() -> None:
    # Without today's machine type every entry was a candidate: an x86_64 Linux history got a
    # cheaper arm64 (or another OS's) runner recommended.
    catalogue = load_catalogue_text(
        user_text(
            ENTRY.format(name="x64small", vcpus=2),
            ENTRY.format(name="armsmall", vcpus=2)
            .replace('arch = "x64"', 'arch = "arm64"')
            .replace("usd_per_min = 0.01", "usd_per_min = 0.005"),
        ),
        source="test",
    )
    arm = catalogue.get("armsmall")
    assert arm.arch == "arm64"
    results, runs = measured(1, [("a.py::t", 0.0, 10.0, 9.9)], machine="unnamed")
    results["peak_rss_mib"] = 100.0
    runs["platform"] = "Linux-6.1.0-28-cloud-amd64-x86_64-with-glibc2.36"
    fit = fit_machines(runs, results, catalogue).jobs[0]
    assert [p.machine for p in fit.predictions] == ["x64small"]
    assert fit.recommended is not None
    assert fit.recommended.name == "x64small"
    assert any("linux x64" in note for note in fit.notes)
    runs["platform"] = None
    fit = fit_machines(runs, results, catalogue).jobs[0]
    assert {p.machine for p in fit.predictions} == {"x64small", "armsmall"}
    assert fit.recommended is not None
    assert fit.recommended.name == "armsmall"  # cheaper, and nothing says it may not be


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Linux-6.1.0-28-cloud-amd64-x86_64-with-glibc2.36", ("linux", "x64")),
        ("Linux-5.15.0-1057-aws-aarch64-with-glibc2.35", ("linux", "arm64")),
        ("macOS-14.5-arm64-arm-64bit", ("macos", "arm64")),
        ("macOS-13.6-x86_64-i386-64bit", ("macos", "x64")),
        ("Windows-10-10.0.19045-SP0", ("windows", None)),
        ("FreeBSD-14.0-RELEASE-amd64-64bit-ELF", (None, "x64")),
        ("", (None, None)),
    ],
)
def test_platform_names_map_to_catalogue_os_and_arch(
    text: str, expected: tuple[str | None, str | None]
) -> None:
    assert platform_os_arch(text) == expected


def test_cores_used_are_read_against_the_wall_the_history_measured() -> None:
    # A BLAS test filling both cores of a 2-core history keeps its main thread waiting 3 of
    # its 10 s: CPU / quiet wall read 2.9 cores, the sizing took a 3-core history machine and
    # predicted the 2-vCPU machine slower than the history it ran on.
    results, runs = measured(1, [("a.py::blas", 0.0, 10.0, 20.0)], machine="unnamed")
    results["cpu_wait_s"] = 3.0
    results["peak_rss_mib"] = 100.0
    fit = fit_machines(runs, results, CATALOGUE).jobs[0]
    assert fit.max_cores_used == pytest.approx(2.0)
    walls = {p.machine: p.wall_s for p in fit.predictions}
    assert walls["two"] == pytest.approx(walls["eight"])
    assert fit.recommended is not None
    assert fit.recommended.name == "two"


def test_a_plugin_history_without_job_wall_is_told_the_missing_start_stamp() -> None:
    # The plugin recorded the run order (seq): only the job's start stamp was missing.
    from analysis.split.job_model import missing_inputs_note

    note = missing_inputs_note(("job_wall_s",))
    assert "start stamp" in note
    assert "LAPTIME_JOB_STARTED_AT" in note
    assert "record with the laptime plugin" not in note
    # A durations/JUnit history (no run order) is still told to record with the plugin.
    assert "laptime plugin" in missing_inputs_note(("job_wall_s", "startup_s", "seq"))
    assert missing_inputs_note(()) == ""


def _two_jobs(exit_unit: float | None, exit_gpu: float | None) -> JobModel:
    unit = measured(1, PARTS, collect_by_file=COLLECT, exit_s=exit_unit, job="unit")
    gpu = measured(2, PARTS, collect_by_file=COLLECT, exit_s=exit_gpu, job="gpu")
    results = pd.concat([unit[0], gpu[0]], ignore_index=True)
    return fit_job_model(results, pd.concat([unit[1], gpu[1]], ignore_index=True))


def test_the_measured_exit_tail_is_charged_per_job() -> None:
    model = _two_jobs(0.5, 1.5)
    assert "exit_s" not in model.inputs_missing

    def exit_of(job: str) -> float:
        parts = model.predict(
            files=["a.py", "b.py"], n_tests=5, test_s=16.0, workers=1, overhead_s=0.0, job=job
        )
        assert parts.fixed_s == pytest.approx(
            parts.ci_setup_s + parts.startup_s + parts.collect_s + parts.first_use_s + parts.exit_s
        )
        return parts.exit_s

    assert (exit_of("unit"), exit_of("gpu")) == pytest.approx((0.5, 1.5))
    # A job the history never ran under the wrapper: the project's median.
    assert exit_of("new") == pytest.approx(1.0)


def test_a_job_without_a_measured_tail_takes_the_projects() -> None:
    model = _two_jobs(None, 1.5)
    parts = model.predict(
        files=["a.py", "b.py"], n_tests=5, test_s=16.0, workers=1, overhead_s=0.0, job="unit"
    )
    assert parts.exit_s == pytest.approx(1.5)
    assert "exit_s" not in model.inputs_missing


def test_an_unmeasured_exit_tail_is_the_stated_default() -> None:
    model = _two_jobs(None, None)
    parts = model.predict(files=["a.py", "b.py"], n_tests=5, test_s=16.0, workers=1, overhead_s=0.0)
    assert parts.exit_s == pytest.approx(EXIT_TAIL_DEFAULT_S)
    assert model.inputs_missing == ("exit_s",)
    note = missing_inputs_note(model.inputs_missing)
    assert f"{EXIT_TAIL_DEFAULT_S:g} s for the whole suite is charged" in note
    assert "laptime-ci run -- pytest" in note
    # JUnit-only history: its wall says nothing of an exit, so nothing is charged.
    junit_results, junit_runs = one_job({"a.py::t": 3.0}, overhead_s=10.0)
    junit = fit_job_model(junit_results, junit_runs)
    assert junit.exit_s == 0.0
    assert "exit_s" in junit.inputs_missing


def test_the_exit_tail_follows_what_the_job_ran() -> None:
    # Two whole-suite runs measured a 0.8 s tail; part of it every process pays (interpreter
    # and pytest shutdown), the rest grows with what the session ran.
    model = _two_jobs(0.8, 0.8)
    fixed = EXIT_FIXED_SHARE * 0.8

    def exit_for(n_tests: int) -> float:
        files = ["a.py", "b.py"][: 1 + (n_tests > 3)]
        parts = model.predict(
            files=files, n_tests=n_tests, test_s=1.0, workers=1, overhead_s=0.0, job="unit"
        )
        return parts.exit_s

    assert exit_for(5) == pytest.approx(0.8)
    assert exit_for(1) == pytest.approx(fixed + (0.8 - fixed) / 5)
    assert fixed < exit_for(1) < exit_for(3) < exit_for(5)
    # A job run that held 1 of the suite's 5 tests and took 0.5 s says the whole suite's tail
    # is 0.5 / (its scale): runs of any size are brought to one measure before the median.
    small_results, small_runs = measured(
        3, PARTS[:1], collect_by_file={"a.py": 0.5}, exit_s=0.5, job="unit"
    )
    whole_results, whole_runs = measured(4, PARTS, collect_by_file=COLLECT, exit_s=None)
    mixed = fit_job_model(
        pd.concat([small_results, whole_results], ignore_index=True),
        pd.concat([small_runs, whole_runs], ignore_index=True),
    )
    scale_one = EXIT_FIXED_SHARE + (1 - EXIT_FIXED_SHARE) / 5
    suite_tail = 0.5 / scale_one
    assert mixed.exit_by_job["unit"] == pytest.approx(suite_tail)
    again = mixed.predict(
        files=["a.py"], n_tests=1, test_s=1.0, workers=1, overhead_s=0.0, job="unit"
    )
    assert again.exit_s == pytest.approx(0.5)


def test_an_exit_tail_measured_on_a_busy_machine_is_taken_at_quiet_speed() -> None:
    # The run got half a core (its tests waited as long as they ran): its exit, interpreter
    # work too, took twice as long as a quiet machine's would.
    busy = measured(1, PARTS, collect_by_file=COLLECT, exit_s=1.6, share=0.5)
    model = fit_job_model(*busy)
    assert model.exit_s == pytest.approx(0.8)
    quiet = fit_job_model(*measured(1, PARTS, collect_by_file=COLLECT, exit_s=1.6))
    assert quiet.exit_s == pytest.approx(1.6)


# The full suite's history: a.py starts a worker pool, so b.py::pool finds it running (0.3 s).
FULL: list[Test] = [
    ("a.py::t1", 0.0, 1.0, 1.0),
    ("a.py::t2", 0.0, 1.0, 1.0),
    ("b.py::pool", 0.0, 0.3, 0.3),
    ("c.py::t", 0.0, 2.0, 2.0),
]


def _pool_history(*pool_first_calls: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two full runs, then one loop job per value in which b.py::pool ran first (that call)."""
    runs = [measured(1, FULL), measured(2, FULL)]
    for i, call in enumerate(pool_first_calls):
        job = [("b.py::pool", 0.0, call, call), ("c.py::t", 0.0, 2.0, 2.0)]
        runs.append(measured(10 + i, job, job="job 2"))
    return (
        pd.concat([r[0] for r in runs], ignore_index=True),
        pd.concat([r[1] for r in runs], ignore_index=True),
    )


def test_a_call_that_pays_when_first_in_its_process_is_charged_to_its_job() -> None:
    results, runs = _pool_history(1.0, 1.1)
    model = fit_job_model(results, runs)
    # Median first (1.05) minus median elsewhere (0.3); a.py::t1 is first everywhere: no contrast.
    assert model.call_first_use_s == pytest.approx({"b.py::pool": 0.75})
    plan = plan_splits(results, runs, SplitOptions(jobs=(2, 2), min_gain_frac=0.0))
    # The estimate is what a fresh process pays, so the job that runs it pays it once.
    assert plan.estimates.loc["b.py::pool", "duration_s"] == pytest.approx(1.05)
    holding = [job for job in plan.jobs if "b.py" in " ".join(job.members)]
    assert len(holding) == 1
    # Every other test's estimate is untouched.
    assert plan.estimates.loc["c.py::t", "duration_s"] == pytest.approx(2.0)


@pytest.mark.parametrize(
    "firsts",
    [
        (1.0,),  # one run is no pattern
        (1.0, 0.32),  # not consistent: once as fast as elsewhere
        (0.33, 0.34),  # within the floor (0.05 s, 25% of its median)
    ],
)
def test_no_call_first_use_without_a_steady_excess(firsts: tuple[float, ...]) -> None:
    results, runs = _pool_history(*firsts)
    model = fit_job_model(results, runs)
    assert model.call_first_use_s == {}
