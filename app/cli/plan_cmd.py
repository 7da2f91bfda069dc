"""`laptime plan`: how to split the tests of local reports into CI jobs, and whether to."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import cast

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from analysis.durations import format_duration
from analysis.split.job_model import missing_inputs_note
from analysis.split.options import (
    GRANULARITIES,
    MAX_WINDOW_RUNS,
    OBJECTIVES,
    Granularity,
    Objective,
    SplitOptions,
)
from analysis.split.plan import SplitPlan, plan_splits
from app.cli.json_out import echo_json
from app.cli.local_reports import HISTORY_JOB, history_invocation, load_local, local_runner
from app.cli.options import (
    DURATION,
    JOB_RANGE,
    JOBS_HELP,
    NO_ROOTDIR_WARNING,
    invocation_options,
    report_console,
    report_format_option,
)
from app.schemas import split as answers
from app.work_limits import PLAN_TIME_LIMIT_S, stop_after

MEMBERS_SHOWN = 6


@click.command()
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--jobs",
    type=JOB_RANGE,
    default="2",
    show_default=True,
    help=f"Number of jobs, or a range like 2-6 to let the planner pick ({JOBS_HELP}).",
)
@click.option(
    "--granularity",
    type=click.Choice(GRANULARITIES),
    default="auto",
    show_default=True,
    help="What moves between jobs: whole files, files behind a "
    "marker, single tests, or auto (files, splitting only a file too big for a job).",
)
@click.option(
    "--overhead",
    "overhead_s",
    type=DURATION,
    default=None,
    help="Per-job setup time (e.g. 5m); default: measured as job wall - test time.",
)
@click.option(
    "--budget",
    "budget_s",
    type=DURATION,
    default=None,
    help="Per-job time limit (a CI timeout), setup included, e.g. 30m.",
)
@click.option(
    "--objective",
    type=click.Choice(OBJECTIVES),
    default="wait",
    show_default=True,
    help="Least wait; least machine time within --wait-target; or least cost.",
)
@click.option(
    "--wait-target",
    "wait_target_s",
    type=DURATION,
    default=None,
    help="For --objective machine: the longest acceptable wait (default: today's).",
)
@click.option(
    "--window",
    "window_runs",
    type=click.IntRange(min=1, max=MAX_WINDOW_RUNS),
    default=20,
    show_default=True,
    help="Recent results per test the median is taken over.",
)
@click.option(
    "--marker", default="slow", show_default=True, help="Marker name for --granularity marker."
)
@click.option(
    "--history",
    is_flag=True,
    help="The files are repeated runs of ONE job, not the jobs of one pipeline.",
)
@click.option("--machine", default=None, help="Machine type the reports ran on.")
@click.option(
    "--price-per-min",
    type=click.FloatRange(min=0),
    default=None,
    help="Price of that machine per minute; enables cost.",
)
@click.option(
    "--durations-out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write pytest-split's .test_durations (JSON nodeid -> seconds) here.",
)
@click.option(
    "--time-limit",
    "time_limit_s",
    type=DURATION,
    default=PLAN_TIME_LIMIT_S,
    show_default=True,
    help="Stop planning further job counts after this long; the plan says what was tried.",
)
@report_format_option
@invocation_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as one JSON object.")
def plan(
    files: tuple[str, ...],
    jobs: tuple[int, int],
    granularity: str,
    overhead_s: float | None,
    budget_s: float | None,
    objective: str,
    wait_target_s: float | None,
    window_runs: int,
    marker: str,
    history: bool,
    machine: str | None,
    price_per_min: float | None,
    durations_out: Path | None,
    time_limit_s: float,
    fmt: str,
    invocation: str,
    rootdir: str | None,
    as_json: bool,
) -> None:
    """Plan how to split the tests in FILE... into CI jobs: wait, machine time, verdict."""
    data = load_local(files, fmt)
    if data.results.empty:
        raise click.ClickException("the reports hold no test results")
    runs = data.runs.copy()
    if history:
        runs["job"] = HISTORY_JOB
    if machine is not None or price_per_min is not None:
        runs["machine"] = machine or "local"
    replay = history_invocation(data, invocation, rootdir)
    if not replay.replayable:
        click.echo(NO_ROOTDIR_WARNING, err=True)
    prices = None if price_per_min is None else {str(runs["machine"].iloc[0]): price_per_min}
    try:
        options = SplitOptions(
            jobs=jobs,
            granularity=cast(Granularity, granularity),
            overhead_s=overhead_s,
            budget_s=budget_s,
            objective=cast(Objective, objective),
            wait_target_s=wait_target_s,
            window_runs=window_runs,
            marker=marker,
            runner=local_runner(data),  # in the runner's words: docs/runners.md
            invocation=replay,
        )
        result = plan_splits(
            data.results,
            runs,
            options,
            price_per_min=prices,
            should_stop=stop_after(time_limit_s),
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if durations_out is not None:
        body = json.dumps(result.config.get("test_durations", {}), indent=2, sort_keys=True)
        try:
            durations_out.write_text(body + "\n", encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(f"{durations_out}: cannot write: {exc}") from exc
    if as_json:
        echo_json(answers.SplitPlan.of(result), exclude=answers.SERVER_FIELDS)
        return
    _print_plan(result, report_console())


def _members_text(members: tuple[str, ...]) -> str:
    if not members:
        return "(today's job)"
    shown = ", ".join(members[:MEMBERS_SHOWN])
    more = len(members) - MEMBERS_SHOWN
    return shown + (f" (+{more} more)" if more > 0 else "")


def _print_plan(result: SplitPlan, console: Console) -> None:
    style = {"split": "green", "keep": "cyan", "not_worth_it": "yellow", "refused": "red"}
    verdict = result.verdict.replace("_", " ")
    console.print(f"[bold {style[result.verdict]}]{verdict}[/]: {result.reason}")
    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {warning}")
    note = missing_inputs_note(result.inputs_missing)
    if note:
        console.print(note, markup=False, highlight=False)
    # A plugin history (it has the run order) that still lacks the allocator state: no overhead
    # stands in for this one, so say what to change. JUnit-only history is told above.
    if "malloc" in result.inputs_missing and "seq" not in result.inputs_missing:
        console.print(
            "model: a history run had glibc's dynamic malloc thresholds (or did not say): a "
            "fresh job process may pay allocation costs the history did not; pin them "
            "(the laptime plugin does unless --laptime-malloc=dynamic, docs/planner.md)",
            markup=False,
            highlight=False,
        )

    totals = Table(title="Pipeline", title_justify="left")
    for col in ("", "jobs", "wait", "machine time", "cost"):
        totals.add_column(col, justify="right" if col else "left")
    for label, t in (("before", result.before), ("after", result.after)):
        cost = "" if t.cost is None else f"{t.cost:.2f}"
        totals.add_row(
            label, str(t.jobs), format_duration(t.wait_s), format_duration(t.machine_s), cost
        )
    console.print(totals)

    jobs = Table(title="Jobs", title_justify="left")
    for col in ("job", "members", "tests", "test time", "setup", "wall"):
        jobs.add_column(col, justify="left" if col in ("job", "members") else "right")
    for job in result.jobs:
        jobs.add_row(
            # Text, not markup: names from reports may hold "[sig-network]".
            Text(job.name),
            Text(_members_text(job.members)),
            str(job.n_tests),
            format_duration(job.test_s / job.workers),
            format_duration(job.overhead_s),
            format_duration(job.wall_s),
        )
    console.print(jobs)

    pareto = Table(title="Job counts", title_justify="left")
    for col in ("jobs", "wait", "machine time", "best possible wait", "fits budget", ""):
        pareto.add_column(col, justify="right", no_wrap=True)
    for row in result.pareto:
        mark = (
            "chosen"
            if row.chosen
            else "best, not adopted"
            if row.best
            else ("pareto" if row.pareto_optimal else "")
        )
        pareto.add_row(
            str(row.jobs),
            format_duration(row.wait_s),
            format_duration(row.machine_s),
            format_duration(row.lower_bound_wait_s),
            "yes" if row.feasible else "no",
            mark,
        )
    console.print(pareto)

    config = result.config
    if "markers" in config:
        console.print("[bold]Add to each file[/]:")
        for file, line in config["markers"].items():
            console.print(f"  {file}: {line}", markup=False)
    if result.verdict == "split":
        console.print("[bold]Run[/]:")
        for job in result.jobs:
            command = shlex.join(["pytest", *job.pytest_args])
            # In the runner's words (docs/runners.md).
            if result.config.get("runner", "pytest") != "pytest":
                command = job.command
            # Whole and unwrapped: the printed line is the command to copy.
            console.print(f"  {job.name}: {command}", markup=False, highlight=False, soft_wrap=True)
    if "github_actions" in config:
        console.print("[bold]GitHub Actions[/]:")
        console.print(config["github_actions"], markup=False, highlight=False, soft_wrap=True)
