"""Split planning: how to cut one CI cell's tests into jobs, what it buys, and whether to bother.

The model. A job's wall time is its setup overhead (measured per job and machine type as
job wall - test time, or given) plus its test time divided by its xdist workers. A pipeline's
wait is its longest job; its machine time is the sum of its jobs; its cost is each job's wall
times its machine's price per minute (None when a price is missing: never invented).

The input is the runs + results of ONE cell (one pipeline's worth of jobs, possibly over many
pipelines of history); `plan_cells` splits a matrix into its cells by run labels.

Why one module (just over 500 lines): candidates, Pareto rows, verdict and config are the steps
of `plan_splits`; the result types already live in analysis/split/result.py and the partitioner
in analysis/split/partition.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from analysis.ci.config import (
    default_job,
    job_pytest_args,
    marker_split,
    pytest_split_durations,
)
from analysis.ci.pytest_selection import job_args
from analysis.ci.runner_commands import FILE_ONLY, JobSelection, nodeids_of_members, select_jobs
from analysis.ci.snippets import pytest_commands, runner_snippets
from analysis.durations import format_duration
from analysis.durations import parse_duration_s as parse_duration_s  # app.pages imports it here
from analysis.errors import AnswerError
from analysis.estimate import estimate_durations, result_durations
from analysis.split.heap_model import HeapProfile, align_heap_profile
from analysis.split.items import ItemCatalog, Items
from analysis.split.job_model import JobModel, fit_job_model
from analysis.split.options import (
    GRANULARITIES,
    MAX_JOBS,
    OBJECTIVES,
    Granularity,
    Objective,
    SplitOptions,
)
from analysis.split.partition import Partition, lower_bound, partition_items
from analysis.split.result import LayoutTotals, ParetoRow, PlannedJob, SplitPlan, Verdict
from model.frames import cell_key

__all__ = [
    "GRANULARITIES",
    "MAX_JOBS",
    "OBJECTIVES",
    "Granularity",
    "LayoutTotals",
    "Objective",
    "ParetoRow",
    "PlannedJob",
    "SplitOptions",
    "SplitPlan",
    "Verdict",
    "format_duration",
    "plan_cells",
    "plan_splits",
]

# Plans whose waits are within this fraction of the best count as tied; the cheaper one wins.
WAIT_TIE_FRAC = 0.01


@dataclass(frozen=True)
class _Reference:
    """Machine, workers and setup overhead a newly planned job inherits."""

    machine: str | None
    workers: int
    overhead_s: float
    overhead_given: bool = False  # the user set it: it is the CI setup as is
    job: str | None = None  # the job whose measured setup parts a job of this reference pays


@dataclass(frozen=True)
class _Candidate:
    row: ParetoRow
    jobs: tuple[PlannedJob, ...]  # without members (see _finish)
    overflow: str | None  # why the plan breaks the budget, when it does
    names: np.ndarray  # item labels
    groups: tuple[np.ndarray, ...]  # item positions per job


def _text(seconds: float) -> str:
    """Durations in reasons are compared with budgets and targets: keep their seconds."""
    return format_duration(seconds, exact=True)


# ------------------------------------------------------------------------------------ layout


def _run_overheads(results: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per run: measured setup overhead = wall - test time / workers (NaN without a wall)."""
    test_s = result_durations(results).groupby(results["run_id"]).sum()
    frame = runs[["run_id", "job", "machine", "wall_s", "xdist_workers"]].copy()
    frame["workers"] = pd.to_numeric(frame["xdist_workers"], errors="coerce").fillna(1)
    frame["workers"] = frame["workers"].clip(lower=1).astype("int64")
    frame["test_s"] = frame["run_id"].map(test_s).fillna(0.0)
    wall = pd.to_numeric(frame["wall_s"], errors="coerce")
    frame["overhead_s"] = (wall - frame["test_s"] / frame["workers"]).clip(lower=0.0)
    return frame


def _price(price_per_min: Mapping[str, float] | None, machine: str | None) -> float | None:
    if price_per_min is None or machine is None:
        return None
    return price_per_min.get(machine)


def _job(
    name: str,
    members: tuple[str, ...],
    n_tests: int,
    test_s: float,
    ref: _Reference,
    price_per_min: Mapping[str, float] | None,
    pytest_args: tuple[str, ...] = (),
    *,
    model: JobModel | None = None,
    files: Sequence[str] = (),
) -> PlannedJob:
    """A job priced by the job model from its parts, or as setup + tests / workers without."""
    parts = None
    overhead = ref.overhead_s
    if model is not None:
        parts = model.predict(
            files=files,
            n_tests=n_tests,
            test_s=test_s,
            workers=ref.workers,
            overhead_s=ref.overhead_s,
            overhead_given=ref.overhead_given,
            job=ref.job,
        )
        overhead = parts.fixed_s
        # Kept "before dividing by workers", as the field has always been.
        test_s = parts.tests_s if ref.workers == 1 else parts.tests_s * ref.workers
    wall = overhead + test_s / ref.workers
    price = _price(price_per_min, ref.machine)
    return PlannedJob(
        name=name,
        members=members,
        n_tests=n_tests,
        test_s=test_s,
        overhead_s=overhead,
        workers=ref.workers,
        machine=ref.machine,
        wall_s=wall,
        cost=None if price is None else wall / 60.0 * price,
        pytest_args=pytest_args,
        parts=parts,
    )


def _totals(jobs: Sequence[PlannedJob]) -> LayoutTotals:
    costs = [job.cost for job in jobs]
    known = [c for c in costs if c is not None]
    return LayoutTotals(
        jobs=len(jobs),
        wait_s=max((job.wall_s for job in jobs), default=0.0),
        machine_s=sum(job.wall_s for job in jobs),
        cost=sum(known) if costs and len(known) == len(costs) else None,
    )


def _mode(values: pd.Series) -> Any:
    counts = values.dropna().value_counts()
    return counts.index[0] if len(counts) else None


def executed_a_plan(runs: pd.DataFrame) -> pd.Series:
    """True for the runs that executed a laptime plan: a stored `plan_id` or a `plan` label."""
    labelled = runs["labels"].map(lambda labels: isinstance(labels, dict) and "plan" in labels)
    if "plan_id" in runs.columns:
        labelled = labelled | runs["plan_id"].notna()
    return labelled.astype(bool)


def todays_runs(results: pd.DataFrame, runs: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs (and their results) of the pipeline as it runs today, for "before".

    A run that executed a laptime plan tried a candidate layout: its jobs are not today's
    jobs while runs without a plan remain in the window (docs/planner.md); once every run
    executed plans (one was adopted), those are today's pipeline."""
    trial = executed_a_plan(runs)
    if not trial.any() or trial.all():
        return results, runs
    kept = runs[~trial.to_numpy()]
    return results[results["run_id"].isin(kept["run_id"])], kept


def current_layout(
    results: pd.DataFrame,
    runs: pd.DataFrame,
    estimates: pd.DataFrame,
    *,
    overhead_s: float | None = None,
    price_per_min: Mapping[str, float] | None = None,
    model: JobModel | None = None,
) -> tuple[list[PlannedJob], _Reference, list[str]]:
    """Today's jobs (by name) with predicted walls, the reference for new jobs, and warnings."""
    warnings: list[str] = []
    results, runs = todays_runs(results, runs)
    per_run = _run_overheads(results, runs)
    measured = per_run.dropna(subset=["overhead_s"])
    if overhead_s is None and len(measured) < len(per_run):
        warnings.append(
            f"{len(per_run) - len(measured)} of {len(per_run)} runs have no job wall time; "
            "their setup overhead is taken from the others (or 0 s): pass an overhead"
        )
    job_of_run = runs.set_index("run_id")["job"].astype(str)
    tests = pd.DataFrame(
        {"job": results["run_id"].map(job_of_run), "nodeid": results["nodeid"].astype(str)}
    ).drop_duplicates()
    tests["duration_s"] = tests["nodeid"].map(estimates["duration_s"])
    tests["file"] = tests["nodeid"].map(estimates["file"]).astype(str)
    job_test_s = tests.groupby("job")["duration_s"].sum()
    job_n = tests.groupby("job").size()
    job_files = tests.groupby("job")["file"].unique()
    jobs: list[PlannedJob] = []
    raw_overhead: dict[str, float] = {}  # the job model's parts are not the inherited setup
    for name, group in per_run.groupby(per_run["job"].astype(str), sort=True):
        machine = _mode(group["machine"])
        workers = int(group["workers"].median())
        if overhead_s is not None:
            overhead = overhead_s
        else:
            own = group["overhead_s"].dropna()
            same_machine = measured[measured["machine"] == machine]["overhead_s"]
            pool = (
                own if len(own) else same_machine if len(same_machine) else measured["overhead_s"]
            )
            overhead = float(pool.median()) if len(pool) else 0.0
        ref = _Reference(machine, workers, overhead, overhead_s is not None, str(name))
        raw_overhead[str(name)] = overhead
        jobs.append(
            _job(
                str(name),
                (),
                int(job_n.get(name, 0)),
                float(job_test_s.get(name, 0.0)),
                ref,
                price_per_min,
                model=model,
                files=list(job_files.get(name, [])),
            )
        )
    if not jobs:
        raise AnswerError("no runs to plan from")
    heaviest = max(jobs, key=lambda job: (job.test_s, job.name))
    if overhead_s is not None:
        new_overhead = overhead_s
    else:
        # A new job runs on the heaviest job's machine: its overhead is that machine's median.
        on_machine = measured[measured["machine"] == heaviest.machine]["overhead_s"]
        new_overhead = (
            float(on_machine.median()) if len(on_machine) else raw_overhead[heaviest.name]
        )
    reference = _Reference(
        heaviest.machine, heaviest.workers, new_overhead, overhead_s is not None, heaviest.name
    )
    return jobs, reference, warnings


# -------------------------------------------------------------------------------------- plan


def fits_budget(job: PlannedJob, budget_s: float | None) -> bool:
    """True when the job's whole wall (setup overhead + tests / workers) is within budget."""
    return budget_s is None or job.wall_s <= budget_s + 1e-9


def plan_splits(
    results: pd.DataFrame,
    runs: pd.DataFrame,
    options: SplitOptions,
    *,
    price_per_min: Mapping[str, float] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SplitPlan:
    """Plan how to split one cell's tests into jobs (see the module docstring for the model).

    `should_stop` is asked before each further job count once one asked-for count is planned;
    when it says stop, the plan is made of the counts done and says so (`complete` False)."""
    if options.objective == "cost" and price_per_min is None:
        raise AnswerError("objective 'cost' needs a price per minute for the machine type")
    runs = runs[runs["run_id"].isin(results["run_id"].unique())]
    if results.empty or runs.empty:
        raise AnswerError("no results to plan from")
    model = fit_job_model(
        results, runs, setup_factor=options.setup_factor, test_factor=options.test_factor
    )
    # Estimates of quiet-machine test time without first-use costs (those are the model's).
    estimates = estimate_durations(model.results, runs, window_runs=options.window_runs)
    forced: list[str] = []
    if options.runner in FILE_ONLY and options.granularity in ("auto", "test"):
        # Its command line selects files, not single tests: a split file would run twice.
        forced.append(f"{options.runner} selects whole files: files are kept whole")
        options = replace(options, granularity="file")
    before_jobs, ref, warnings = current_layout(
        results,
        runs,
        estimates,
        overhead_s=options.overhead_s,
        price_per_min=price_per_min,
        model=model,
    )
    if options.objective == "cost" and _price(price_per_min, ref.machine) is None:
        raise AnswerError(f"objective 'cost' needs a price for machine type {ref.machine!r}")
    warnings = forced + warnings
    before = _totals(before_jobs)
    missing = int((estimates["source"] != "history").sum())
    if missing:
        warnings.append(f"{missing} tests have no duration history; their time is estimated")
    lo, hi = options.jobs
    catalog = ItemCatalog(estimates, model.file_costs(estimates["file"]) * ref.workers)
    heap = align_heap_profile(model.heap, estimates.index)
    # The table covers the asked-for counts plus one job, the reference everything pays for.
    counts = sorted({1, *range(lo, hi + 1)})
    candidates: list[_Candidate] = []
    for k in counts:
        # Checked before committing to the next count, never before the first asked-for one,
        # so there is always a plan to answer with.
        if k > lo and should_stop is not None and should_stop():
            warnings.append(
                f"planning stopped early (time limit): job counts {k}-{hi} were not tried; "
                "ask for a narrower range"
            )
            break
        candidates.append(_candidate(catalog, k, options, ref, price_per_min, model, heap))
    allowed = [c for c in candidates if lo <= c.row.jobs <= hi]
    chosen = _choose(allowed, options, before)
    verdict, reason = _verdict(chosen, allowed, options, before, before_jobs)
    best_jobs = chosen.row.jobs if chosen else None
    pareto = _pareto_rows(
        [c.row for c in candidates], best_jobs, best_jobs if verdict == "split" else None
    )
    jobs = (
        _finish(chosen, options, estimates)
        if chosen is not None and verdict == "split"
        else tuple(before_jobs)
    )
    after = _totals(jobs) if verdict == "split" else before
    config = _config(jobs, options, estimates) if verdict == "split" else {}
    if verdict != "split" and options.runner == "pytest":
        config = {"test_durations": pytest_split_durations(estimates["duration_s"])}
    return SplitPlan(
        verdict=verdict,
        reason=reason,
        objective=options.objective,
        granularity=options.granularity,
        before_jobs=tuple(before_jobs),
        jobs=tuple(jobs),
        before=before,
        after=after,
        pareto=pareto,
        estimates=estimates,
        budget_s=options.budget_s,
        warnings=tuple(warnings),
        config=config,
        complete=len(candidates) == len(counts),
        inputs_missing=model.inputs_missing,
    )


def plan_cells(
    results: pd.DataFrame,
    runs: pd.DataFrame,
    options: SplitOptions,
    *,
    price_per_min: Mapping[str, float] | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> dict[str, SplitPlan]:
    """One plan per matrix cell (runs grouped by their labels, e.g. `os=linux,python=3.11`)."""
    keys = runs["labels"].map(cell_key)
    plans: dict[str, SplitPlan] = {}
    for key in sorted(keys.unique()):
        cell_runs = runs[keys == key]
        cell_results = results[results["run_id"].isin(cell_runs["run_id"])]
        if len(cell_results):
            plans[key] = plan_splits(
                cell_results,
                cell_runs,
                options,
                price_per_min=price_per_min,
                should_stop=should_stop,
            )
    return plans


def _candidate(
    catalog: ItemCatalog,
    k: int,
    options: SplitOptions,
    ref: _Reference,
    price_per_min: Mapping[str, float] | None,
    model: JobModel,
    heap: HeapProfile | None = None,
) -> _Candidate:
    max_item_s = catalog.total_s / k
    forced_s = np.inf
    # What every job pays before its own files: CI setup and interpreter startup.
    base = model.predict(
        files=(),
        n_tests=0,
        test_s=0.0,
        workers=ref.workers,
        overhead_s=ref.overhead_s,
        overhead_given=ref.overhead_given,
        job=ref.job,
    ).fixed_s
    if options.budget_s is not None:
        # Split further what could never fit a job under the budget, overhead counted first.
        forced_s = max(options.budget_s - base, 0.0) * ref.workers
        max_item_s = min(max_item_s, forced_s)
    items = catalog.items(options.granularity, max_item_s, forced_s, k)
    names = items.names
    groups, weights, test_s = _heap_aware_groups(items, k, heap, ref.workers)
    # Members and pytest arguments are filled in for the chosen plan only (see _finish).
    jobs = tuple(
        _job(
            f"job {i + 1}",
            (),
            int(items.counts[g].sum()),
            float(test_s[g].sum()),
            ref,
            price_per_min,
            model=model,
            files=catalog.file_names(np.unique(items.files[g])),
        )
        for i, g in enumerate(groups)
    )
    totals = _totals(jobs)
    overflow = None
    for job in jobs:
        if not fits_budget(job, options.budget_s):
            overflow = (
                f"{job.name} would take {_text(job.wall_s)} "
                f"({_text(job.overhead_s)} setup + "
                f"{_text(job.test_s / job.workers)} tests)"
            )
            break
    bound = base + lower_bound(weights, k) / ref.workers
    row = ParetoRow(k, totals.wait_s, totals.machine_s, totals.cost, bound, overflow is None)
    return _Candidate(row, jobs, overflow, names, tuple(groups))


def _groups(weights: np.ndarray, k: int) -> list[np.ndarray]:
    """Item positions per job, heaviest job first (the numbering reads naturally); empty
    jobs are dropped."""
    part: Partition = partition_items(weights, k)
    groups = [part.members(b) for b in range(k)]
    return sorted((g for g in groups if len(g)), key=lambda g: -float(weights[g].sum()))


def _item_heap_deltas(
    items: Items, groups: Sequence[np.ndarray], heap: HeapProfile, workers: int
) -> np.ndarray:
    """Per item: seconds its tests' heap-bound time changes by in the job `groups` puts it."""
    job_of_item = np.full(len(items.names), -1, dtype=np.int64)
    for job, group in enumerate(groups):
        job_of_item[group] = job
    deltas = heap.job_deltas(job_of_item[items.codes], workers)
    return np.bincount(items.codes, weights=deltas, minlength=len(items.names))


def _heap_aware_groups(
    items: Items, k: int, heap: HeapProfile | None, workers: int
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """(groups, item weights, item test seconds) of a k-job layout.

    A test whose time follows the heap costs less in a job holding fewer objects
    (analysis/split/heap_model.py), and how much depends on the job it lands in: the items are
    partitioned, reweighed by what that layout's jobs do to them, and partitioned again; the
    seconds returned are those of the final layout, so its prediction is exact to the model."""
    groups = _groups(items.weights, k)
    if heap is None:
        return groups, items.weights, items.test_s
    weights = np.maximum(items.weights + _item_heap_deltas(items, groups, heap, workers), 0.0)
    groups = _groups(weights, k)
    deltas = _item_heap_deltas(items, groups, heap, workers)
    return groups, weights, items.test_s + deltas


def _finish(
    candidate: _Candidate, options: SplitOptions, estimates: pd.DataFrame
) -> tuple[PlannedJob, ...]:
    """The chosen plan's jobs with their members and their runner's arguments and command."""
    members = [tuple(candidate.names[g].tolist()) for g in candidate.groups]
    if options.runner == "pytest":
        args = job_pytest_args(members, options.granularity, options.marker)
        if options.granularity != "marker":
            # Coarsest members of the tests each job holds, as the history's run named them.
            args = job_args(
                estimates.index.astype(str).tolist(),
                nodeids_of_members(estimates, members),
                options.invocation,
                home=default_job(members),
            )
        selections = pytest_commands(args)
    else:
        args = [()] * len(members)
        nodeids = nodeids_of_members(estimates, members)
        selections = select_jobs(options.runner, estimates["file"], nodeids)
    return tuple(
        replace(
            job,
            members=members[i],
            pytest_args=args[i],
            runner_args=selections[i].args,
            command=selections[i].command,
        )
        for i, job in enumerate(candidate.jobs)
    )


def _choose(
    candidates: Sequence[_Candidate], options: SplitOptions, before: LayoutTotals
) -> _Candidate | None:
    feasible = [c for c in candidates if c.row.feasible]
    if not feasible:
        return None
    if options.objective == "wait":
        best_wait = min(c.row.wait_s for c in feasible)
        tied = [c for c in feasible if c.row.wait_s <= best_wait * (1 + WAIT_TIE_FRAC)]
        return min(tied, key=lambda c: (c.row.machine_s, c.row.jobs))
    if options.objective == "machine":
        target = options.wait_target_s if options.wait_target_s is not None else before.wait_s
        within = [c for c in feasible if c.row.wait_s <= target + 1e-9]
        if within:
            return min(within, key=lambda c: (c.row.machine_s, c.row.wait_s, c.row.jobs))
        return min(feasible, key=lambda c: (c.row.wait_s, c.row.jobs))
    return min(feasible, key=lambda c: (c.row.cost or 0.0, c.row.wait_s, c.row.jobs))


def _pareto_rows(
    rows: Sequence[ParetoRow], best_jobs: int | None, chosen_jobs: int | None
) -> tuple[ParetoRow, ...]:
    out = []
    for row in rows:
        dominated = any(
            other.feasible
            and other.wait_s <= row.wait_s
            and other.machine_s <= row.machine_s
            and (other.wait_s < row.wait_s or other.machine_s < row.machine_s)
            for other in rows
        )
        out.append(
            ParetoRow(
                row.jobs,
                row.wait_s,
                row.machine_s,
                row.cost,
                row.lower_bound_wait_s,
                row.feasible,
                pareto_optimal=row.feasible and not dominated,
                chosen=row.jobs == chosen_jobs,
                best=row.jobs == best_jobs,
            )
        )
    return tuple(out)


def _verdict(
    chosen: _Candidate | None,
    candidates: Sequence[_Candidate],
    options: SplitOptions,
    before: LayoutTotals,
    before_jobs: Sequence[PlannedJob],
) -> tuple[Verdict, str]:
    if chosen is None:
        worst = min(candidates, key=lambda c: c.row.wait_s)
        lo, hi = options.jobs
        span = f"{lo}" if lo == hi else f"{lo}-{hi}"
        return "refused", (
            f"no plan with {span} jobs keeps every job within the "
            f"{_text(options.budget_s or 0.0)} budget: even the best, "
            f"{worst.overflow}; allow more jobs or a finer granularity"
        )
    after = chosen.row
    saved = before.wait_s - after.wait_s
    extra_machine = after.machine_s - before.machine_s
    extra_cost = (
        after.cost - before.cost if after.cost is not None and before.cost is not None else None
    )
    over_budget = [job.name for job in before_jobs if not fits_budget(job, options.budget_s)]
    summary = (
        f"{after.jobs} jobs: wait {_text(before.wait_s)} -> "
        f"{_text(after.wait_s)}, machine time {_text(before.machine_s)} -> "
        f"{_text(after.machine_s)}"
    )
    if over_budget:
        return "split", f"today's {', '.join(over_budget)} exceeds the budget; {summary}"
    if options.objective == "machine":
        target = options.wait_target_s if options.wait_target_s is not None else before.wait_s
        if after.wait_s > target + 1e-9:
            return "refused", (
                f"no plan meets the {_text(target)} wait target; the best, {summary}"
            )
        if before.wait_s > target + 1e-9:
            return "split", f"today's wait misses the {_text(target)} target; {summary}"
        if extra_machine < -1e-9:
            return "split", summary
        return "keep", "no layout within the wait target needs less machine time than today's"
    if options.objective == "cost" and extra_cost is not None:
        if extra_cost < -1e-9:
            return "split", f"{summary}, cost {before.cost:.2f} -> {after.cost:.2f}"
        return "keep", "no layout is cheaper than today's"
    if saved <= max(options.min_gain_frac * before.wait_s, 1e-9):
        if after.jobs > before.jobs and extra_machine > 0:
            return "not_worth_it", (
                f"{summary}: saves only {_text(max(saved, 0.0))} "
                f"({saved / before.wait_s:.0%}) because each job pays "
                f"{_text(chosen.jobs[0].overhead_s)} of setup"
            )
        return "keep", f"today's layout is already within {options.min_gain_frac:.0%} of the best"
    if extra_machine > options.max_machine_per_wait * saved:
        return "not_worth_it", (
            f"{summary}: {_text(saved)} less wait costs "
            f"{_text(extra_machine)} more machine time, because each extra job pays "
            f"{_text(chosen.jobs[0].overhead_s)} of setup"
        )
    return "split", summary


def _config(
    jobs: Sequence[PlannedJob], options: SplitOptions, estimates: pd.DataFrame
) -> dict[str, Any]:
    config: dict[str, Any] = {}
    if options.granularity == "marker":
        split = marker_split([list(job.members) for job in jobs], options.marker)
        config["markers"] = dict(split.lines)
        config["marker_expressions"] = list(split.expressions)
    elif options.granularity == "file":
        config["files"] = [list(job.members) for job in jobs]
    config["runner"] = options.runner
    selections = [JobSelection(options.runner, j.runner_args, j.command) for j in jobs]
    config.update(runner_snippets(options.runner, selections, [j.pytest_args for j in jobs]))
    if options.runner == "pytest":
        config["test_durations"] = pytest_split_durations(estimates["duration_s"])
    config["selections"] = [
        {"runner": s.runner, "args": list(s.args), "command": s.command} for s in selections
    ]
    return config
