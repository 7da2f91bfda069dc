"""`laptime analyze`: where the test time goes, from local report files, no server needed."""

from __future__ import annotations

import json

import click
from rich.table import Table
from rich.text import Text

from analysis.durations import format_duration
from analysis.filters import Filters, filter_facts, filter_runs
from analysis.rollups.shares import ROLLUP_DIMENSIONS, Rollup, check_dimension, rollup
from app.cli.local_reports import load_local
from app.cli.options import report_console, report_format_option
from figures.humanize import percent_text
from model.frames import facts_from_results


@click.command()
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--by",
    default="file",
    show_default=True,
    help=f"Dimension to split time by: {', '.join(ROLLUP_DIMENSIONS)}.",
)
@click.option("--within", default=None, help="Dimension shares are taken within (parent).")
@click.option("--limit", type=int, default=20, show_default=True, help="Rows to show; 0 = all.")
@click.option("--sort", default="total_s", show_default=True, help="Column to sort rows by.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of rows.")
@click.option("--csv", "as_csv", is_flag=True, help="Print the rows as CSV (empty = unknown).")
@report_format_option
@click.option("--job", "jobs", multiple=True, help="Keep only this job (file stem); repeatable.")
@click.option("--marker", "markers", multiple=True, help="Keep tests with this marker.")
@click.option("--exclude-marker", "exclude_markers", multiple=True, help="Drop these markers.")
@click.option("--file", "file_globs", multiple=True, help="Keep test files matching this glob.")
def analyze(
    files: tuple[str, ...],
    by: str,
    within: str | None,
    limit: int,
    sort: str,
    as_json: bool,
    as_csv: bool,
    fmt: str,
    jobs: tuple[str, ...],
    markers: tuple[str, ...],
    exclude_markers: tuple[str, ...],
    file_globs: tuple[str, ...],
) -> None:
    """Split the test time in report FILES by a dimension (one file = one job run; a JUnit
    report and the --durations output of the same run are merged into one)."""
    try:
        check_dimension(by)
        if within is not None:
            check_dimension(within)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if limit < 0:
        raise click.ClickException("--limit must be 0 (all) or more")
    data = load_local(files, fmt)
    if data.results.empty:
        raise click.ClickException("the reports hold no test results")
    filters = Filters(jobs=jobs, markers=markers, exclude_markers=exclude_markers, files=file_globs)
    facts = filter_facts(facts_from_results(data.results, data.runs), filters)
    runs = filter_runs(data.runs, filters)
    try:
        result = rollup(facts, by, within=within, sort=sort, limit=limit or None, runs=runs)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(result.to_records(), indent=2))
        return
    if as_csv:
        # The same columns and spelling as GET /api/v1/projects/{slug}/rollups?format=csv.
        click.echo(result.rows.to_csv(index=False), nl=False)
        return
    _print_table(result)


def _print_table(result: Rollup) -> None:
    console = report_console()
    table = Table(title=f"Test time by {result.by}", title_justify="left")
    table.add_column(result.by, overflow="fold", min_width=24)
    for name in ("runs", "total", "share", "mean", "p50", "p95", "max", "fail", "flaky", "tests"):
        table.add_column(name, justify="right", no_wrap=True)
    if result.within is not None:
        table.add_column(f"share of {result.within}", justify="right", no_wrap=True)
    for row in result.to_records():
        cells: list[str | Text] = [
            # Text, not markup: "[sig-network]" in a test name is not a rich style tag.
            Text(str(row["key"])),
            str(row["runs"]),
            format_duration(row["total_s"]),
            percent_text(row["share"]),
            format_duration(row["mean_s"]),
            format_duration(row["p50_s"]),
            format_duration(row["p95_s"]),
            format_duration(row["max_s"]),
            str(row["failures"]),
            str(row["flaky"]),
            str(row["tests"]),
        ]
        if result.within is not None:
            cells.append(percent_text(row["parent_share"]))
        table.add_row(*cells)
    console.print(table)
    shown = len(result.rows)
    console.print(
        f"{shown} of {result.keys_total} rows; total {format_duration(result.grand_total_s)}; "
        f"{result.completeness.describe()}",
        highlight=False,
    )
