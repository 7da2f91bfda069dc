"""Machine right-sizing: the cheapest catalogue entry each job fits, and what it saves.

Memory. A job needs the peak RSS its tests reach (the pytest plugin's per-test peaks, which
are per xdist worker process, times the workers the job runs on that machine), or else the
job-level peak uploaded with the run (already the whole job), times a headroom factor.

Time (Amdahl-style). A job's wall on a machine is
    setup overhead + longest test + (test time - longest test) / workers,
the longest single test being the chain no worker count can split. A parallel job's workers
are capped by the machine's vCPUs; a job whose workers matched its machine's vCPUs
(`-n auto`) is assumed to follow the vCPUs of any machine. Tests that used several cores
(CPU time / wall > 1: BLAS/OpenMP threads) scale the test part by an Amdahl factor fitted on
the history machine (analysis/split/job_model.py `parallel_profile`); without that evidence a
serial job takes as long on any machine: more vCPUs buy it nothing.

For each job the recommendation is the cheapest entry (same OS, architecture, executor and
GPU-ness as today's) that fits the memory need and keeps the job's wall within the wait
target (default: today's pipeline wait, the longest job), priced per run and per month at
the observed run rate. A job without memory data gets no advice, only what to collect.

Why one module (over 500 lines): the fit, its predictions and the sizing report share the
private per-job readers (`_overhead`, `_job_peak`, `_test_table`) that gather each job's
`JobEvidence`, which `_fit_job` and `_predict` read; any cut would part the model from the
evidence it reads. The catalogue already lives apart
(analysis/sizing/catalogue.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from analysis.errors import AnswerError
from analysis.estimate import estimate_durations
from analysis.sizing.catalogue import Catalogue, MachineType
from analysis.split.job_model import ParallelProfile, fit_job_model, parallel_profile
from analysis.split.plan import current_layout
from analysis.split.result import PlannedJob

DEFAULT_HEADROOM = 1.25
DAYS_PER_MONTH = 30
PEAK_TESTS_SHOWN = 3
MemorySource = Literal["per-test", "job"]
COLLECT_MEMORY = (
    "no memory data for this job: run pytest with the laptime plugin "
    "(--laptime-report=PATH, per-test peak RSS) or upload the job's peak_rss_mib"
)


@dataclass(frozen=True)
class JobSpec:
    """A job to size: today's job (no members) or a planned one (nodeids, files, file::Class).

    None means "as measured": test time from the members' estimates, workers, machine and
    setup overhead from today's job of that name, else from the heaviest job.
    """

    name: str
    members: tuple[str, ...] = ()
    test_s: float | None = None
    workers: int | None = None
    machine: str | None = None
    overhead_s: float | None = None


def job_specs(jobs: Iterable[PlannedJob]) -> list[JobSpec]:
    """JobSpecs from the split planner's jobs (`SplitPlan.jobs`)."""
    return [
        JobSpec(
            name=job.name,
            members=tuple(job.members),
            test_s=job.test_s,
            workers=job.workers,
            machine=job.machine,
            overhead_s=job.overhead_s,
        )
        for job in jobs
    ]


@dataclass(frozen=True)
class Prediction:
    """One job on one catalogue entry."""

    machine: str
    vcpus: float
    memory_gib: float
    workers: int
    wall_s: float
    need_mib: float | None
    fits_memory: bool | None  # None without memory data
    within_wait: bool
    cost_per_run: float | None


@dataclass(frozen=True)
class MachineFit:
    """The sizing answer for one job."""

    job: str
    members: tuple[str, ...]
    machine: str | None  # today's machine type as uploaded
    current: MachineType | None  # its catalogue entry (None = unknown type)
    workers: int
    parallel: bool
    test_s: float
    overhead_s: float
    chain_s: float
    memory_source: MemorySource | None
    peak_mib: float | None  # per worker (per-test source) or whole job (job source)
    need_mib: float | None  # on today's machine and workers, headroom included
    peak_tests: tuple[tuple[str, float], ...]
    wall_s: float  # today
    recommended: MachineType | None
    recommended_workers: int | None
    recommended_wall_s: float | None
    cost_per_run: float | None  # today
    recommended_cost_per_run: float | None
    runs_per_day: float | None
    advice: str
    predictions: tuple[Prediction, ...]
    notes: tuple[str, ...] = ()
    job_peak_mib: float | None = None  # the job's uploaded peak, used or not
    # Measured parallelism: the largest per-test CPU/wall, and the Amdahl parallel share.
    max_cores_used: float = 1.0
    parallel_fraction: float = 0.0

    @property
    def memory_basis(self) -> str:
        """Which memory figure the need comes from, in words (shown beside every need)."""
        if self.memory_source == "per-test" and self.peak_mib is not None:
            per = f"{self.workers} workers" if self.workers > 1 else "1 process"
            basis = (
                f"largest per-test peak RSS of the test processes, {self.peak_mib:.0f} MiB x {per}"
            )
            if self.job_peak_mib is not None and self.job_peak_mib > self.peak_mib * self.workers:
                basis += (
                    f"; the job's peak of {self.job_peak_mib:.0f} MiB is not used "
                    "(it may count other processes, e.g. a container's cgroup)"
                )
            return basis
        if self.memory_source == "job" and self.peak_mib is not None:
            return f"the job's peak RSS as uploaded, {self.peak_mib:.0f} MiB (no per-test peaks)"
        return "no memory data"

    @property
    def cost_per_month(self) -> float | None:
        """Today's cost at the observed run rate x 30 days."""
        return _monthly(self.cost_per_run, self.runs_per_day)

    @property
    def recommended_cost_per_month(self) -> float | None:
        """The recommendation's cost at the observed run rate x 30 days."""
        return _monthly(self.recommended_cost_per_run, self.runs_per_day)

    @property
    def saving_per_run(self) -> float | None:
        """Today's cost per run minus the recommendation's."""
        if self.cost_per_run is None or self.recommended_cost_per_run is None:
            return None
        return self.cost_per_run - self.recommended_cost_per_run

    @property
    def saving_per_month(self) -> float | None:
        """Monthly saving at the observed run rate."""
        return _monthly(self.saving_per_run, self.runs_per_day)


@dataclass(frozen=True)
class SizingReport:
    """Every job's fit, the pipeline wait before and after, and the totals."""

    catalogue: str
    unit: str  # "USD" or the catalogue's credit name
    headroom: float
    wait_target_s: float
    wait_s: float  # today: the longest job
    wait_after_s: float  # with every recommendation applied
    jobs: tuple[MachineFit, ...]
    unknown_machines: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    @property
    def cost_per_month(self) -> float | None:
        """Every job today at the observed run rate (None when any job's cost is unknown)."""
        return _sum_known([j.cost_per_month for j in self.jobs])

    @property
    def cost_per_month_after(self) -> float | None:
        """The same with every recommendation applied."""
        return _sum_known(
            [
                j.recommended_cost_per_month if j.recommended is not None else j.cost_per_month
                for j in self.jobs
            ]
        )

    @property
    def saving_per_month(self) -> float | None:
        """Today's monthly cost minus the recommended one."""
        total, after = self.cost_per_month, self.cost_per_month_after
        return None if total is None or after is None else total - after


# ---------------------------------------------------------------------------------- model


def workers_on(vcpus: float, observed: int, *, auto: bool) -> int:
    """xdist workers a job runs with on a machine of `vcpus` (1 for a serial job)."""
    if observed <= 1:
        return 1
    cores = max(math.floor(vcpus), 1)
    return cores if auto else min(observed, cores)


def predict_wall_s(overhead_s: float, test_s: float, chain_s: float, workers: int) -> float:
    """Setup + the unsplittable longest test + the rest of the tests spread over workers."""
    chain = min(max(chain_s, 0.0), test_s)
    return overhead_s + chain + (test_s - chain) / max(workers, 1)


def memory_need_mib(peak_mib: float, workers: int, headroom: float, source: MemorySource) -> float:
    """Per-test peaks are per worker process, so they scale with workers; a job peak does not."""
    return peak_mib * (workers if source == "per-test" else 1) * headroom


# ---------------------------------------------------------------------------- entry point


@dataclass(frozen=True)
class JobEvidence:
    """What the history says about one job to size: its spec, its tests (one row each), its
    test seconds, workers, machine, longest test, setup, uploaded peak and run rate."""

    spec: JobSpec
    tests: pd.DataFrame
    test_s: float
    workers: int
    machine: str | None
    chain_s: float
    overhead_s: float
    job_peak_mib: float | None
    runs_per_day: float | None

    @property
    def wall_s(self) -> float:
        """The job's predicted wall on today's machine and workers."""
        return predict_wall_s(self.overhead_s, self.test_s, self.chain_s, self.workers)


def fit_machines(
    runs: pd.DataFrame,
    results: pd.DataFrame,
    catalogue: Catalogue,
    *,
    headroom: float = DEFAULT_HEADROOM,
    wait_target_s: float | None = None,
    jobs: Sequence[JobSpec] | None = None,
) -> SizingReport:
    """Size every job of one cell (today's, or `jobs` from a split plan) against a catalogue."""
    if not math.isfinite(headroom) or headroom < 1.0:
        raise AnswerError(f"headroom must be a number >= 1, got {headroom}")
    if wait_target_s is not None and (not math.isfinite(wait_target_s) or wait_target_s <= 0):
        raise AnswerError("wait target must be a positive number of seconds")
    runs = runs[runs["run_id"].isin(results["run_id"].unique())]
    if results.empty or runs.empty:
        raise AnswerError("no results to size from")
    estimates = estimate_durations(results, runs)
    today, _ref, warnings = current_layout(results, runs, estimates)
    # Quiet-machine test times (analysis/split/job_model.py): what cores used are read against.
    model = fit_job_model(results, runs)
    quiet = estimate_durations(model.results, runs)["duration_s"]
    tests, pairs = _test_table(results, runs, estimates, quiet)
    by_name = {job.name: job for job in today}
    heaviest = max(today, key=lambda job: (job.test_s, job.name))
    specs = list(jobs) if jobs else [JobSpec(name=job.name) for job in today]
    per_day = _runs_per_day(runs)

    overhead_of: dict[str, float] = {}
    for job in today:
        measured = _overhead(runs, job.name, tests[_job_mask(tests, pairs, job.name)])
        overhead_of[job.name] = job.overhead_s if measured is None else measured

    prepared: list[JobEvidence] = []
    for spec in specs:
        base = by_name.get(spec.name, heaviest) if not spec.members else heaviest
        mask = (
            _member_mask(tests, spec.members)
            if spec.members
            else _job_mask(tests, pairs, spec.name)
        )
        own = tests[mask]
        prepared.append(
            JobEvidence(
                spec=spec,
                tests=own,
                test_s=spec.test_s if spec.test_s is not None else float(own["duration_s"].sum()),
                workers=max(int(spec.workers if spec.workers is not None else base.workers), 1),
                machine=spec.machine if spec.machine is not None else base.machine,
                chain_s=float(own["duration_s"].max()) if len(own) else 0.0,
                overhead_s=(
                    spec.overhead_s if spec.overhead_s is not None else overhead_of[base.name]
                ),
                job_peak_mib=None if spec.members else _job_peak(runs, spec.name),
                runs_per_day=per_day.get("\0pipelines" if spec.members else spec.name),
            )
        )

    wait_s = max((job.wall_s for job in prepared), default=0.0)
    target = wait_target_s if wait_target_s is not None else wait_s
    platform = history_platform(runs)
    fits = tuple(
        _fit_job(catalogue, job, headroom=headroom, target_s=target, history_platform=platform)
        for job in prepared
    )
    unknown = sorted({f.machine for f in fits if f.current is None and f.machine is not None})
    if any(f.machine is None for f in fits):
        warnings.append("some jobs have no machine type: pass one (--machine) to price today")
    wait_after = max(
        (f.recommended_wall_s if f.recommended_wall_s is not None else f.wall_s for f in fits),
        default=0.0,
    )
    return SizingReport(
        catalogue=catalogue.name,
        unit=catalogue.unit,
        headroom=headroom,
        wait_target_s=target,
        wait_s=wait_s,
        wait_after_s=wait_after,
        jobs=fits,
        unknown_machines=tuple(unknown),
        warnings=tuple(warnings),
    )


def _fit_job(
    catalogue: Catalogue,
    job: JobEvidence,
    *,
    headroom: float,
    target_s: float,
    history_platform: tuple[str | None, str | None],
) -> MachineFit:
    """One job's fit: today's machine, every comparable entry's prediction, the cheapest."""
    spec, own, test_s, workers = job.spec, job.tests, job.test_s, job.workers
    machine, chain_s, overhead_s = job.machine, job.chain_s, job.overhead_s
    job_peak, runs_per_day = job.job_peak_mib, job.runs_per_day
    notes: list[str] = []
    current = catalogue.match(machine)
    parallel = workers > 1
    auto = parallel and current is not None and workers >= current.vcpus
    profile = parallel_profile(
        own["quiet_s"],
        own["cpu_s"],
        None if current is None else current.vcpus / workers,
        wall_s=own["duration_s"],  # the history's wall: the estimate, a median of its results
    )
    peaks = own["peak_rss_mib"].dropna()
    source: MemorySource | None
    if len(peaks):
        source, peak = "per-test", float(peaks.max())
    elif job_peak is not None:
        source, peak = "job", job_peak
        if parallel:
            notes.append(
                "memory need is the job's peak, which does not shrink with fewer workers: "
                "per-test peaks (the laptime plugin) would size it more precisely"
            )
    else:
        source, peak = None, None
    top = own.dropna(subset=["peak_rss_mib"]).nlargest(PEAK_TESTS_SHOWN, "peak_rss_mib")
    peak_tests = tuple(
        (str(n), float(p)) for n, p in zip(top.index, top["peak_rss_mib"], strict=True)
    )
    if machine is not None and current is None:
        notes.append(f"machine type {machine!r} is not in catalogue {catalogue.name!r}")
    if current is None and any(history_platform):
        kept = " ".join(part for part in history_platform if part)
        notes.append(f"candidates: {kept} machine types, what the history ran on")
    if profile.parallel:
        notes.append(
            f"tests use up to {profile.max_cores_used:.1f} cores each (CPU time / wall: "
            f"threads such as BLAS/OpenMP; {profile.parallel_fraction:.0%} of test time runs "
            "in parallel): on fewer vCPUs per process they slow down (Amdahl)"
        )
    elif not parallel:
        notes.append("tests run serially: duration does not depend on vCPUs, extra cores are waste")
    if parallel and auto:
        notes.append(f"{workers} workers on {workers} vCPUs: assumed to follow vCPUs (-n auto)")
    wall = predict_wall_s(overhead_s, test_s, chain_s, workers)
    predictions = tuple(
        _predict(
            catalogue,
            m,
            overhead_s,
            test_s,
            chain_s,
            workers,
            auto,
            peak,
            source,
            headroom,
            target_s,
            profile,
        )
        for m in _candidates(catalogue, current, history_platform)
    )
    cost_today = None
    if current is not None:
        rate = catalogue.rate_per_min(current)
        cost_today = None if rate is None else rate * wall / 60.0
    need = (
        None if peak is None or source is None else memory_need_mib(peak, workers, headroom, source)
    )
    recommended: MachineType | None = None
    rec: Prediction | None = None
    if source is None:
        advice = COLLECT_MEMORY
    else:
        ok = [
            p for p in predictions if p.fits_memory and p.within_wait and p.cost_per_run is not None
        ]
        if ok:
            rec = min(ok, key=lambda p: (p.cost_per_run or 0.0, p.vcpus, p.machine))
            recommended = catalogue.get(rec.machine)
            advice = _advice(rec, current, cost_today)
        else:
            advice = (
                f"no {catalogue.name} entry fits a {need or 0:.0f} MiB need "
                f"within the {target_s:.0f} s wait target"
            )
    return MachineFit(
        job=spec.name,
        members=spec.members,
        machine=machine,
        current=current,
        workers=workers,
        parallel=parallel,
        test_s=test_s,
        overhead_s=overhead_s,
        chain_s=chain_s,
        memory_source=source,
        peak_mib=peak,
        need_mib=need,
        peak_tests=peak_tests,
        wall_s=wall,
        recommended=recommended,
        recommended_workers=None if rec is None else rec.workers,
        recommended_wall_s=None if rec is None else rec.wall_s,
        cost_per_run=cost_today,
        recommended_cost_per_run=None if rec is None else rec.cost_per_run,
        runs_per_day=runs_per_day,
        advice=advice,
        predictions=predictions,
        notes=tuple(notes),
        job_peak_mib=job_peak,
        max_cores_used=profile.max_cores_used,
        parallel_fraction=profile.parallel_fraction,
    )


def _predict(
    catalogue: Catalogue,
    machine: MachineType,
    overhead_s: float,
    test_s: float,
    chain_s: float,
    workers: int,
    auto: bool,
    peak: float | None,
    source: MemorySource | None,
    headroom: float,
    target_s: float,
    profile: ParallelProfile,
) -> Prediction:
    n = workers_on(machine.vcpus, workers, auto=auto)
    # Tests that used several cores (threads) get machine.vcpus / n each, Amdahl-scaled.
    scale = profile.scale(machine.vcpus / n)
    wall = predict_wall_s(overhead_s, test_s * scale, chain_s * scale, n)
    need = None if peak is None or source is None else memory_need_mib(peak, n, headroom, source)
    rate = catalogue.rate_per_min(machine)
    return Prediction(
        machine=machine.name,
        vcpus=machine.vcpus,
        memory_gib=machine.memory_gib,
        workers=n,
        wall_s=wall,
        need_mib=need,
        fits_memory=None if need is None else need <= machine.memory_mib + 1e-9,
        within_wait=wall <= target_s + 1e-9,
        cost_per_run=None if rate is None else rate * wall / 60.0,
    )


def _advice(rec: Prediction, current: MachineType | None, cost_today: float | None) -> str:
    if current is not None and rec.machine == current.name:
        return f"keep {current.name}: nothing cheaper fits the memory need within the wait target"
    if current is None or cost_today is None:
        return f"use {rec.machine} (today's cost unknown, so no saving is given)"
    verb = (
        "downsize to"
        if rec.vcpus < current.vcpus or rec.memory_gib < current.memory_gib
        else ("move to")
    )
    share = (rec.cost_per_run or 0.0) / cost_today if cost_today > 0 else float("nan")
    return f"{verb} {rec.machine}: {share:.0%} of today's cost per run"


def _candidates(
    catalogue: Catalogue,
    current: MachineType | None,
    history_platform: tuple[str | None, str | None],
) -> list[MachineType]:
    """Entries comparable to today's machine: same OS, arch, executor and GPU-ness; without
    it, the OS and arch the history ran on, where known."""
    if current is None:
        os_name, arch = history_platform
        return [
            m
            for m in catalogue.machines
            if (os_name is None or m.os == os_name) and (arch is None or m.arch == arch)
        ]
    return [
        m
        for m in catalogue.machines
        if m.os == current.os
        and m.arch == current.arch
        and m.executor == current.executor
        and (m.gpu is None) == (current.gpu is None)
    ]


# ----------------------------------------------------------------------------------- data


def _test_table(
    results: pd.DataFrame, runs: pd.DataFrame, estimates: pd.DataFrame, quiet: pd.Series
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per test: file, class key, estimated and quiet duration, CPU seconds (median) and peak
    RSS; plus (job, nodeid) pairs."""
    job_of_run = runs.set_index("run_id")["job"].astype(str)
    frame = pd.DataFrame(
        {
            "nodeid": results["nodeid"].astype(str).to_numpy(),
            "job": results["run_id"].map(job_of_run).to_numpy(),
            "peak_rss_mib": pd.to_numeric(results["peak_rss_mib"], errors="coerce").to_numpy(),
            "cpu_s": pd.to_numeric(results["cpu_s"], errors="coerce").to_numpy()
            if "cpu_s" in results.columns
            else np.nan,
        }
    )
    by_test = frame.groupby("nodeid", sort=True)
    table = by_test[["peak_rss_mib"]].max()
    table["cpu_s"] = by_test["cpu_s"].median()
    table["duration_s"] = estimates["duration_s"].reindex(table.index).fillna(0.0)
    table["quiet_s"] = quiet.reindex(table.index).fillna(table["duration_s"])
    table["file"] = estimates["file"].reindex(table.index).astype(str)
    parts = table.index.to_series().str.split("::", n=2, expand=True)
    if parts.shape[1] >= 3:
        has_class = parts[2].notna().to_numpy()
        joined = (parts[0] + "::" + parts[1]).to_numpy(dtype=object)
        table["class_key"] = np.where(has_class, joined, table.index.to_numpy(dtype=object))
    else:
        table["class_key"] = table.index.to_numpy(dtype=object)
    pairs = frame[["job", "nodeid"]].dropna().drop_duplicates()
    return table, pairs


def _job_mask(tests: pd.DataFrame, pairs: pd.DataFrame, job: str) -> np.ndarray:
    return np.asarray(tests.index.isin(pairs.loc[pairs["job"] == job, "nodeid"]), dtype=bool)


def _member_mask(tests: pd.DataFrame, members: Sequence[str]) -> np.ndarray:
    wanted = pd.Index(list(members))
    return np.asarray(
        tests.index.isin(wanted) | tests["file"].isin(wanted) | tests["class_key"].isin(wanted),
        dtype=bool,
    )


def _overhead(runs: pd.DataFrame, job: str, own: pd.DataFrame) -> float | None:
    """Median measured setup: wall minus the Amdahl test part, per run of `job`."""
    mine = runs[runs["job"].astype(str) == job]
    walls = pd.to_numeric(mine["wall_s"], errors="coerce").dropna()
    if walls.empty or own.empty:
        return None
    workers = pd.to_numeric(mine["xdist_workers"], errors="coerce").fillna(1).clip(lower=1)
    test_s = float(own["duration_s"].sum())
    chain = float(own["duration_s"].max())
    part = pd.Series(
        [predict_wall_s(0.0, test_s, chain, int(w)) for w in workers.loc[walls.index]],
        index=walls.index,
    )
    return float((walls - part).clip(lower=0.0).median())


def _job_peak(runs: pd.DataFrame, job: str) -> float | None:
    peaks = pd.to_numeric(runs.loc[runs["job"].astype(str) == job, "peak_rss_mib"], errors="coerce")
    peaks = peaks.dropna()
    return float(peaks.max()) if len(peaks) else None


def _runs_per_day(runs: pd.DataFrame) -> dict[str, float]:
    """Runs per day per job over the observed span, plus pipelines per day under "\\0pipelines"."""
    started = pd.to_datetime(runs["started_at"], utc=True, errors="coerce")
    if started.notna().sum() == 0:
        return {}
    span_days = max((started.max() - started.min()).total_seconds() / 86400.0, 1.0)
    out = {str(k): v / span_days for k, v in runs.groupby(runs["job"].astype(str)).size().items()}
    pipelines = runs["pipeline"].where(runs["pipeline"].notna(), runs["run_id"].astype(str))
    out["\0pipelines"] = pipelines.nunique() / span_days
    return out


def _labels_os(runs: pd.DataFrame) -> str | None:
    values = {
        str(labels.get("os")).lower()
        for labels in runs["labels"]
        if isinstance(labels, dict) and labels.get("os")
    }
    return values.pop() if len(values) == 1 else None


# Python's platform.platform() names: "Linux-6.1.0-x86_64-with-glibc2.36",
# "macOS-14.5-arm64-arm-64bit", "Windows-10-10.0.19045-SP0" (no architecture there).
_PLATFORM_OS = {"linux": "linux", "macos": "macos", "darwin": "macos", "windows": "windows"}
_PLATFORM_ARCH = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}


def platform_os_arch(platform: str) -> tuple[str | None, str | None]:
    """(catalogue OS, catalogue arch) of a platform.platform() text; None where it is silent."""
    parts = platform.lower().split("-")
    os_name = _PLATFORM_OS.get(parts[0]) if parts else None
    arches = {_PLATFORM_ARCH[p] for p in parts if p in _PLATFORM_ARCH}
    return os_name, arches.pop() if len(arches) == 1 else None


def history_platform(runs: pd.DataFrame) -> tuple[str | None, str | None]:
    """The OS and arch every run of the history agrees on (the `os` label, else the reported
    platform); None for either where runs differ or do not say."""
    known = (
        runs["platform"].dropna().astype(str)
        if "platform" in runs.columns
        else pd.Series([], dtype=str)
    )
    found = {platform_os_arch(text) for text in known.unique()}
    oses = {os_name for os_name, _ in found}
    arches = {arch for _, arch in found}
    all_said = len(known) == len(runs) and len(runs) > 0
    os_name = _labels_os(runs) or (oses.pop() if all_said and len(oses) == 1 else None)
    arch = arches.pop() if all_said and len(arches) == 1 else None
    return os_name, arch


def _monthly(per_run: float | None, per_day: float | None) -> float | None:
    if per_run is None or per_day is None:
        return None
    return per_run * per_day * DAYS_PER_MONTH


def _sum_known(values: Sequence[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else sum(v or 0.0 for v in values)
