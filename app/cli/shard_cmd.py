"""`laptime shard`: the tests of CI shard I of N, balanced by the durations in local reports."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click
import pandas as pd

from analysis.ci.pytest_selection import Invocation, match_collected
from analysis.estimate import estimate_durations
from analysis.split.plan import format_duration
from analysis.split.shards import Shard, assign_shards
from app.cli.json_out import echo_json
from app.cli.local_reports import history_invocation, load_local, local_runner
from app.cli.options import (
    NO_ROOTDIR_WARNING,
    chosen_runner,
    invocation_options,
    report_format_option,
)
from app.schemas import split as answers
from laptime_ci.shards import read_collected


def _print_selection(shard: Shard, runner: str, *, as_command: bool) -> None:
    """The shard in its runner's words: the arguments one a line, or the command."""
    if shard.selection is None:  # no runner words: the nodeids are its arguments
        click.echo(shlex.join(["python", "-m", "pytest", *shard.nodeids]))
        return
    if as_command and not shard.selection.command:
        raise click.ClickException(f"laptime writes no command for runner {runner!r}")
    if as_command:
        click.echo(shard.selection.command)
        return
    for arg in shard.selection.args:
        click.echo(arg)


def _read_collected(source: str, runner: str = "pytest") -> list[str]:
    """Nodeids, one a line, as `pytest --collect-only -q` prints them (summary lines dropped;
    for other runners every non-blank line is a nodeid)."""
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"{source}: cannot read: {exc.strerror or exc}") from exc
    if runner != "pytest":
        return [line.strip() for line in text.splitlines() if line.strip()]
    return read_collected(text)


@click.command()
@click.argument("files", nargs=-1)
@click.option("--total", type=click.IntRange(min=1), required=True, help="Number of shards N.")
@click.option(
    "--index",
    type=click.IntRange(min=1),
    required=True,
    help="This shard, 1-based like pytest-split's --group (CircleCI: $((CIRCLE_NODE_INDEX + 1))).",
)
@click.option(
    "--collected", default=None, help="File of collected nodeids, one a line; '-' reads stdin."
)
@click.option(
    "--files",
    "as_files",
    is_flag=True,
    help="Print files/classes kept whole instead of every nodeid.",
)
@click.option(
    "--window",
    "window_runs",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Recent results per test the median is taken over.",
)
@report_format_option
@invocation_options
@click.option(
    "--command",
    "as_command",
    is_flag=True,
    help="Print the runner's full command for the shard instead of its arguments.",
)
@click.option("--json", "as_json", is_flag=True, help="Print every shard as JSON.")
def shard(
    files: tuple[str, ...],
    total: int,
    index: int,
    collected: str | None,
    as_files: bool,
    window_runs: int,
    fmt: str,
    invocation: str,
    rootdir: str | None,
    as_command: bool,
    as_json: bool,
) -> None:
    """Print the tests of shard INDEX of TOTAL, using the reports FILE... as duration history."""
    if index > total:
        raise click.ClickException(f"--index {index} is past --total {total} (it is 1-based)")
    if not files and collected is None:
        raise click.ClickException("give report files as history, --collected, or both")
    estimates = pd.Series(dtype="float64")
    runner = chosen_runner()
    units = None
    replay = Invocation(invocation if invocation != "auto" else "paths", rootdir)
    if files:
        data = load_local(files, fmt)
        runner = local_runner(data)
        replay = history_invocation(data, invocation, rootdir)
        if not data.results.empty:
            found = estimate_durations(data.results, data.runs, window_runs=window_runs)
            estimates, units = found["duration_s"], found["file"]
    runner = "pytest" if runner == "auto" else runner
    tests = _read_collected(collected, runner) if collected is not None else None
    if tests is not None and runner == "pytest":
        # A JUnit history's paths are a guess where a directory name holds a dot: the
        # collected nodeids settle it (same dotted form, one match).
        renamed = match_collected(estimates.index.astype(str), tests)
        estimates = estimates.rename(index=renamed)
        units = None if units is None else units.rename(index=renamed)
    if runner == "pytest" and not replay.replayable:
        click.echo(NO_ROOTDIR_WARNING, err=True)
    shards = assign_shards(estimates, tests, total, runner=runner, units=units, invocation=replay)
    if as_json:
        echo_json([answers.Shard.of(s) for s in shards])
        return
    mine = shards[index - 1]
    if as_command or (mine.selection is not None and not as_files):
        _print_selection(mine, runner, as_command=as_command)
    else:
        for line in mine.members if as_files else mine.nodeids:
            click.echo(line)
    click.echo(
        f"shard {index}/{total}: {len(mine.nodeids)} tests, predicted "
        f"{format_duration(mine.predicted_s)}, {len(mine.new_tests)} without history",
        err=True,
    )
