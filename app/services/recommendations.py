"""Recommendations for a project: load the recent runs once, hand them to the analysis engines.

The REST API, the dashboard and the CLI call these functions; each answers a typed object
holding the domain's results (app/schemas builds the wire form from it, once).

Why one module (just over 500 lines): each recommendation is a short function over the same
loaded history (`load_history`) and its cache; the engines themselves live in analysis/.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd
from sqlalchemy import Connection

from analysis.accuracy.calibration import Calibration
from analysis.accuracy.host_speed import HostSpeed, host_speed
from analysis.ci.pytest_selection import recorded_invocation
from analysis.ci.snippets import with_plan_labels
from analysis.errors import AnswerError
from analysis.estimate import estimate_durations
from analysis.filters import Filters
from analysis.reduce.matrix_reduce import GroupBy, MatrixVerdict, reduce_matrix
from analysis.reduce.parametrize import (
    CoveringProposal,
    Explosion,
    find_explosions,
    propose_covering,
)
from analysis.sizing.catalogue import (
    Catalogue,
    load_catalogue_text,
    machine_prices,
    resolve_catalogues,
)
from analysis.sizing.machine_fit import SizingReport, fit_machines, job_specs
from analysis.split.options import SplitOptions
from analysis.split.plan import SplitPlan, plan_splits
from analysis.split.shards import Shard, assign_shards
from app.db.repository import load_run_results, load_runs, run_days, with_tests
from app.db.runners import runner_of_runs
from app.db.shard_pins import PinnedShards, ShardPin, load_pin, pin_once
from app.project_records import Project
from app.services.plan_store import (
    project_calibration,
    record_shard_plan,
    record_split_plan,
)
from app.services.project_reads import kept_test_dictionary, run_results
from app.work_limits import PLAN_TIME_LIMIT_S, stop_after
from model.frames import cell_key as labels_cell

# Recommendations look at the latest runs of each job; older history only slows them down.
RUNS_PER_JOB = 10


class RecommendationError(AnswerError):
    """The data cannot answer the question (no runs in the window, unknown cell...)."""


class ShardPinMismatch(AnswerError):
    """The pipeline's shards were pinned to a plan of other collected tests."""

    status = 409
    code = "shard-pin-mismatch"


@dataclass(frozen=True)
class SplitAnswer:
    """A split plan for one cell, its config as handed out (labelled with the stored plan
    once tracked), the stored plan's id and the calibration it was planned with."""

    cell: str
    cells: tuple[str, ...]
    plan: SplitPlan
    config: Mapping[str, Any]
    calibration: Calibration
    plan_id: str | None = None
    # How far the history runs' speed strayed (analysis/accuracy/host_speed.py).
    host: HostSpeed | None = None

    @property
    def complete(self) -> bool:
        """False when planning stopped early (such an answer is not kept)."""
        return self.plan.complete


@dataclass(frozen=True)
class MachinesAnswer:
    """Sizing of a cell's jobs today and, when a split was asked for, the plan and the
    sizing of its jobs (only when its verdict is split)."""

    cell: str
    cells: tuple[str, ...]
    today: SizingReport
    split: SplitPlan | None = None
    after_split: SizingReport | None = None

    @property
    def complete(self) -> bool:
        """False when the split's planning stopped early."""
        return self.split is None or self.split.complete


@dataclass(frozen=True)
class ShardsAnswer:
    """A shard assignment (every shard, or the one asked for) and its stored plan's id."""

    total: int
    plan_id: str | None
    shards: tuple[Shard, ...]


@dataclass(frozen=True)
class ExplosionAdvice:
    """An explosion and its covering proposal, or the note saying why there is none."""

    explosion: Explosion
    proposal: CoveringProposal | None
    note: str | None = None


@dataclass(frozen=True)
class ParametrizeAnswer:
    """The costliest parametrize explosions and their covering sets at one strength."""

    strength: int
    explosions: tuple[ExplosionAdvice, ...]


@dataclass(frozen=True)
class MatrixAnswer:
    """A verdict per (group, label dimension)."""

    group_by: GroupBy
    verdicts: tuple[MatrixVerdict, ...]


@dataclass(frozen=True)
class History:
    """Recent results and runs of a project; `cells` lists every matrix cell of the window,
    also when the results are those of one cell only."""

    results: pd.DataFrame
    runs: pd.DataFrame
    cells: tuple[str, ...] = ()
    # Split plans already made from this history (the page's plan and its sizing share one).
    plans: dict[tuple[str, SplitOptions, tuple[tuple[str, float], ...]], SplitPlan] = field(
        default_factory=dict, compare=False, repr=False
    )


def load_history(
    conn: Connection,
    project: Project,
    filters: Filters,
    *,
    runs_per_job: int = RUNS_PER_JOB,
    one_cell: bool = False,
    cell: str | None = None,
) -> History:
    """The latest runs of every job in the window, with their results.

    `one_cell` reads the results of `cell` only (default: the cell with the most test time):
    the split and sizing engines look at one cell, and a matrix of 16 cells is 16x the rows.
    """
    runs = load_runs(conn, project.id, filters)
    latest = runs.sort_values("started_at", ascending=False, kind="stable", na_position="last")
    latest = latest.groupby(["job", "labels_key"], dropna=False, sort=False).head(runs_per_job)
    keys = _cells(latest)
    cells = tuple(sorted(keys.unique()))
    tests = kept_test_dictionary(conn, project.id, param_values=True)
    # Test-level filters (markers, files) change which cell is heaviest: read them all then.
    if one_cell and not filters.has_test_filters and len(cells) > 1:
        chosen = cell if cell is not None else _heaviest_cell(latest, keys)
        if chosen not in cells:
            raise _unknown_cell(chosen, list(cells))
        # One cell's runs are few: kept per run, so an upload adds one run's read.
        run_ids = latest.loc[keys == chosen, "run_id"].tolist()
        raw = run_results(conn, project.id, run_ids)
    else:
        # Every cell's runs: read once, not kept (they would crowd the shared frames out).
        run_ids = latest["run_id"].tolist()
        raw = load_run_results(conn, project.id, run_days(conn, project.id, run_ids))
    results = with_tests(filters, raw, tests)
    runs = runs[runs["run_id"].isin(results["run_id"].unique())]
    if results.empty:
        raise RecommendationError("no test results in this window: widen it or upload reports")
    return History(results=results, runs=runs.reset_index(drop=True), cells=cells)


def _cells(runs: pd.DataFrame) -> pd.Series:
    return runs["labels"].map(labels_cell)


def _heaviest_cell(runs: pd.DataFrame, keys: pd.Series) -> str:
    """The cell whose runs hold the most test time (the one whose split matters most)."""
    return str(runs["test_s"].groupby(keys).sum().idxmax())


def _unknown_cell(cell: str, available: list[str]) -> RecommendationError:
    return RecommendationError(f"no cell {cell!r}; cells: {', '.join(available) or '(none)'}")


def _pick_cell(history: History, cell: str | None) -> tuple[str, list[str], History]:
    keys = _cells(history.runs)
    available = list(history.cells) or sorted(keys.unique())
    if cell is None:
        # Default to the cell with the most test time: the one whose split matters most.
        per_run = history.results.groupby("run_id")["duration_s"].sum()
        weight = history.runs.assign(test_s=history.runs["run_id"].map(per_run))
        cell = _heaviest_cell(weight, keys)
    if cell not in available:
        raise _unknown_cell(cell, available)
    runs = history.runs[keys == cell]
    results = history.results[history.results["run_id"].isin(runs["run_id"])]
    return cell, available, History(results=results, runs=runs, cells=history.cells)


def split_recommendation(
    conn: Connection,
    project: Project,
    filters: Filters,
    *,
    options: SplitOptions,
    cell: str | None = None,
    price_per_min: dict[str, float] | None = None,
    history: History | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> SplitAnswer:
    """The split plan for one matrix cell (default: the heaviest), plus the cells available.

    Pass `history` (from load_history) to reuse one read for several recommendations;
    planning stops when `should_stop()` says so (default: after PLAN_TIME_LIMIT_S)."""
    loaded = (
        history
        if history is not None
        else load_history(conn, project, filters, one_cell=True, cell=cell)
    )
    cell_key, cells, history = _pick_cell(loaded, cell)
    # In the stored runner's words (docs/runners.md), replaying the history's pytest invocation
    # (docs/planner.md#selections-that-run).
    options = _with_stored_runner(conn, project, history.runs, options)
    options = _with_recorded_invocation(history.runs, options)
    # The project's measured jobs recalibrate the model's setup and test speed.
    calibration = project_calibration(conn, project)
    options = replace(
        options, setup_factor=calibration.setup_factor, test_factor=calibration.test_factor
    )
    prices = price_per_min if price_per_min is not None else project_prices(project, history.runs)
    plan = _plan(loaded, cell_key, history, options, prices, should_stop)
    # A read stores nothing (so a GET can be repeated, cached or served by a read
    # replica): tracking the plan is track_split_plan's, behind a POST. Pasted as is, each
    # job asks this server for its shard and uploads it (analysis/ci/loop.py); a tracked
    # plan's config names the plan instead. The answer states the error this project's
    # earlier plans had, never below the host speed spread of the history.
    config = with_plan_labels(plan.config, _pytest_args(plan), None)
    return SplitAnswer(
        cell_key, tuple(cells), plan, config, calibration, host=host_speed(history.results)
    )


def track_split_plan(conn: Connection, project: Project, answer: SplitAnswer) -> SplitAnswer:
    """The split answer with its plan stored: its id (None without jobs) and the config
    labelled with it, so the jobs that run it can say so."""
    stored = record_split_plan(conn, project, answer.cell, answer.plan.jobs)
    if stored is None:
        return answer
    # Pasted as is, each job's upload then names the plan and its shard.
    config = with_plan_labels(answer.plan.config, _pytest_args(answer.plan), stored)
    return replace(answer, plan_id=stored, config=config)


def _pytest_args(plan: SplitPlan) -> list[tuple[str, ...]]:
    return [job.pytest_args for job in plan.jobs]


def _plan(
    loaded: History,
    cell_key: str,
    history: History,
    options: SplitOptions,
    prices: dict[str, float] | None,
    should_stop: Callable[[], bool] | None,
) -> SplitPlan:
    """plan_splits of one cell's `history`, made once per question from `loaded` (an
    incomplete plan, stopped by `should_stop`, is not kept)."""
    key = (cell_key, options, tuple(sorted(prices.items())) if prices else ())
    if key in loaded.plans:
        return loaded.plans[key]
    plan = plan_splits(
        history.results,
        history.runs,
        options,
        price_per_min=prices,
        should_stop=should_stop or stop_after(PLAN_TIME_LIMIT_S),
    )
    if plan.complete:
        loaded.plans[key] = plan
    return plan


def project_catalogue(project: Project, machines: Sequence[str | None] = ()) -> Catalogue | None:
    """The catalogue a project's jobs are priced from.

    The project's own (stored through the API) merges over the shipped one of the same name;
    without a declared name, the catalogue that knows most of the machine types is used.
    """
    user = []
    if project.catalogue_toml:
        user.append(load_catalogue_text(project.catalogue_toml, source=f"project {project.slug}"))
    catalogues = resolve_catalogues(user)
    if project.catalogue:
        if project.catalogue not in catalogues:
            raise RecommendationError(f"project catalogue {project.catalogue!r} does not exist")
        return catalogues[project.catalogue]
    # A frame's unknown machine arrives as NaN, not None.
    known = [m for m in machines if isinstance(m, str) and m]
    if not known:
        return None
    best = max(catalogues.values(), key=lambda c: sum(c.match(m) is not None for m in known))
    return best if any(best.match(m) is not None for m in known) else None


def project_prices(project: Project, runs: pd.DataFrame) -> dict[str, float] | None:
    """Dollars per minute by machine type, or None when no catalogue prices them."""
    machines = list(runs["machine"].dropna().unique())
    catalogue = project_catalogue(project, machines)
    if catalogue is None:
        return None
    prices = machine_prices(catalogue, machines)
    return prices or None


def machines_recommendation(
    conn: Connection,
    project: Project,
    filters: Filters,
    *,
    headroom: float = 1.25,
    wait_target_s: float | None = None,
    cell: str | None = None,
    split_options: SplitOptions | None = None,
    history: History | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> MachinesAnswer:
    """The cheapest machine for each job of a cell today, and for each job of a split plan
    (`complete` False when that plan stopped early, see split_recommendation)."""
    loaded = (
        history
        if history is not None
        else load_history(conn, project, filters, one_cell=True, cell=cell)
    )
    cell_key, cells, history = _pick_cell(loaded, cell)
    machines = list(history.runs["machine"].dropna().unique())
    catalogue = project_catalogue(project, machines)
    if catalogue is None:
        raise RecommendationError(
            "no machine catalogue knows these machine types "
            f"({', '.join(map(str, machines)) or 'none uploaded'}): upload `machine`, or set "
            "the project's catalogue with PUT /api/v1/projects/{slug}/catalogue"
        )
    today = fit_machines(
        history.runs, history.results, catalogue, headroom=headroom, wait_target_s=wait_target_s
    )
    if split_options is None:
        return MachinesAnswer(cell_key, tuple(cells), today)
    prices = machine_prices(catalogue, machines) or None
    plan = _plan(loaded, cell_key, history, split_options, prices, should_stop)
    after = None
    if plan.verdict == "split":
        after = fit_machines(
            history.runs,
            history.results,
            catalogue,
            headroom=headroom,
            wait_target_s=wait_target_s,
            jobs=job_specs(plan.jobs),
        )
    return MachinesAnswer(cell_key, tuple(cells), today, plan, after)


def shard_assignment(
    conn: Connection,
    project: Project,
    filters: Filters,
    *,
    total: int,
    index: int | None,
    collected: Sequence[str] | None,
    pipeline: str | None = None,
    track: bool = False,
) -> ShardsAnswer:
    """Shards of the collected tests (or of every test known) by their estimated durations.

    `track` stores the plan (its id is what the jobs upload; a GET leaves plan_id null);
    with a `pipeline`, the first assignment is pinned and every later shard of it gets the
    same one, or ShardPinMismatch when it collected other tests."""
    if index is not None and not 1 <= index <= total:
        raise RecommendationError(f"index must be between 1 and {total}, got {index}")
    digest = collected_digest(collected) if collected is not None else None
    if pipeline and digest is not None:
        pinned = load_pin(conn, project.id, pipeline, total)
        if pinned is not None:
            return _chosen(_pinned(pinned, digest, total), index)
    history: History | None = None
    try:
        history = load_history(conn, project, filters)
        estimates = estimate_durations(history.results, history.runs)["duration_s"]
    except RecommendationError:
        if collected is None:
            raise
        estimates = pd.Series(dtype=float)
    shards = _runner_shards(conn, project, history, estimates, collected, total)
    stored: str | None = None
    if track:
        runs = history.runs if history is not None else None
        prices = project_prices(project, runs) if runs is not None else None
        # The whole assignment is kept (whichever shard asked): its id is what the jobs upload.
        stored = record_shard_plan(conn, project, shards, runs, prices)
    answer = ShardsAnswer(total, stored, tuple(shards))
    if pipeline and digest is not None:
        assignment = PinnedShards(stored, answer.shards)
        pin = pin_once(conn, project.id, pipeline, total, ShardPin(digest, assignment))
        answer = _pinned(pin, digest, total)
    return _chosen(answer, index)


def collected_digest(collected: Sequence[str]) -> str:
    """Names a collection whatever its order and repeats."""
    return hashlib.sha256("\n".join(sorted(set(collected))).encode()).hexdigest()


def _pinned(pin: ShardPin, digest: str, total: int) -> ShardsAnswer:
    if pin.collected != digest:
        raise ShardPinMismatch(
            "this pipeline's shards were pinned to a plan of other collected tests"
        )
    return ShardsAnswer(total, pin.shards.plan_id, pin.shards.shards)


def _chosen(answer: ShardsAnswer, index: int | None) -> ShardsAnswer:
    if index is None:
        return answer
    return replace(answer, shards=(answer.shards[index - 1],))


def _with_stored_runner(
    conn: Connection, project: Project, runs: pd.DataFrame, options: SplitOptions
) -> SplitOptions:
    """`options` in the words of the runner stored on the cell's runs."""
    runner = runner_of_runs(conn, project.id, runs["run_id"].tolist())
    if runner is None or runner == options.runner or options.granularity == "marker":
        return options
    return replace(options, runner=runner)


def _with_recorded_invocation(runs: pd.DataFrame, options: SplitOptions) -> SplitOptions:
    """`options` replaying the history the way its pytest ran (`--pyargs` + the directory its
    nodeids are relative to), as the plugin's reports recorded it."""
    ordered = runs.sort_values("started_at", kind="stable")
    recorded = zip(ordered["invocation"].tolist(), ordered["rootdir"].tolist(), strict=True)
    return replace(options, invocation=recorded_invocation(recorded))


def _runner_shards(
    conn: Connection,
    project: Project,
    history: History | None,
    estimates: pd.Series,
    collected: Sequence[str] | None,
    total: int,
) -> list[Shard]:
    """assign_shards in the stored runner's words, units from the results' files."""
    if history is None or history.results.empty:
        return assign_shards(estimates, collected, total)
    runner = runner_of_runs(conn, project.id, history.runs["run_id"].tolist()) or "pytest"
    units = history.results.drop_duplicates("nodeid", keep="last").set_index("nodeid")["file"]
    return assign_shards(estimates, collected, total, runner=runner, units=units)


def parametrize_recommendation(
    conn: Connection, project: Project, filters: Filters, *, strength: int = 2, top: int = 10
) -> ParametrizeAnswer:
    """The costliest parametrize explosions with covering sets and the code to paste."""
    history = load_history(conn, project, filters)
    advice = []
    for explosion in find_explosions(history.results, history.runs, top=top):
        try:
            advice.append(ExplosionAdvice(explosion, propose_covering(explosion, strength)))
        except ValueError as exc:
            advice.append(ExplosionAdvice(explosion, None, str(exc)))
    return ParametrizeAnswer(strength, tuple(advice))


def matrix_recommendation(
    conn: Connection,
    project: Project,
    filters: Filters,
    *,
    group_by: GroupBy = "file",
    threshold: float = 1.5,
) -> MatrixAnswer:
    """Per group and label dimension: keep every value, or run one per PR and all on main."""
    history = load_history(conn, project, filters)
    verdicts = reduce_matrix(
        history.results,
        history.runs,
        group_by=group_by,
        threshold=threshold,
    )
    return MatrixAnswer(group_by, tuple(verdicts))
