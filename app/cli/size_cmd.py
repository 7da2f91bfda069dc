"""`laptime size`: the cheapest machine type each job of local reports fits, and the saving."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import click
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from analysis.durations import format_duration
from analysis.sizing.catalogue import (
    Catalogue,
    CatalogueError,
    load_catalogue_data,
    load_catalogue_text,
    resolve_catalogues,
)
from analysis.sizing.machine_fit import DEFAULT_HEADROOM, SizingReport, fit_machines
from app.cli.json_out import echo_json
from app.cli.local_reports import HISTORY_JOB, load_local
from app.cli.options import DURATION, report_console, report_format_option
from app.schemas import sizing as answers

ENV_CATALOGUES = "LAPTIME_CATALOGUES"


def read_catalogue_file(path: Path) -> Catalogue:
    """Load a user catalogue (TOML, or YAML by extension); one-line ClickException on error."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise click.ClickException(f"{path}: cannot read catalogue: {exc}") from exc
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                message = " ".join(str(exc).split())
                raise CatalogueError(f"{path}: not valid YAML: {message}") from exc
            return load_catalogue_data(data, source=str(path))
        return load_catalogue_text(text, source=str(path))
    except CatalogueError as exc:
        raise click.ClickException(str(exc)) from exc


def _is_path(value: str) -> bool:
    return (
        os.sep in value
        or value.lower().endswith((".toml", ".yaml", ".yml"))
        or (Path(value).is_file())
    )


def choose_catalogue(
    choice: str | None, machine: str | None, env_paths: Sequence[str]
) -> Catalogue:
    """Shipped + LAPTIME_CATALOGUES + --catalogue PATH merged; the one named or implied."""
    user = [read_catalogue_file(Path(p)) for p in env_paths if p]
    chosen_name: str | None = None
    if choice is not None and _is_path(choice):
        extra = read_catalogue_file(Path(choice))
        user.append(extra)
        chosen_name = extra.name
    elif choice is not None:
        chosen_name = choice.strip().lower()
    try:
        catalogues = resolve_catalogues(user)
    except CatalogueError as exc:
        raise click.ClickException(str(exc)) from exc
    if chosen_name is None:
        matching = [c for c in catalogues.values() if machine and c.match(machine)]
        if not matching:
            hint = f" none knows machine type {machine!r};" if machine else ""
            raise click.ClickException(
                f"pass --catalogue ({', '.join(sorted(catalogues))} or a file):{hint} "
                "the sizing needs the machine types to choose from"
            )
        return matching[0]
    if chosen_name not in catalogues:
        raise click.ClickException(
            f"no catalogue {chosen_name!r}; available: {', '.join(sorted(catalogues))}"
        )
    return catalogues[chosen_name]


@click.command()
@click.argument("files", nargs=-1, required=True)
@click.option(
    "--catalogue",
    "catalogue_choice",
    metavar="NAME|PATH",
    help="circleci, github, gitlab, or a TOML/YAML catalogue file (merged over a shipped one "
    "of the same name). Extra files: LAPTIME_CATALOGUES (a path list).",
)
@click.option("--machine", help="Today's machine type (local reports do not carry it).")
@click.option(
    "--history",
    is_flag=True,
    help="The files are repeated runs of ONE job (sized as one job), not the jobs of one pipeline.",
)
@click.option(
    "--headroom",
    type=click.FloatRange(min=1.0, max=10.0),
    default=DEFAULT_HEADROOM,
    show_default=True,
    help="Memory need = peak RSS x workers x this.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1, max=1024),
    help="xdist workers the tests ran with, when the reports do not say.",
)
@click.option(
    "--wait-target",
    "wait_target_s",
    type=DURATION,
    help="Longest acceptable job wall (300, 5m, 1h); default: today's longest job.",
)
@report_format_option
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def size(
    files: tuple[str, ...],
    catalogue_choice: str | None,
    machine: str | None,
    history: bool,
    headroom: float,
    workers: int | None,
    wait_target_s: float | None,
    fmt: str,
    as_json: bool,
) -> None:
    """Recommend the cheapest machine type each job fits (memory and wait), with the saving."""
    env_paths = os.environ.get(ENV_CATALOGUES, "").split(os.pathsep)
    catalogue = choose_catalogue(catalogue_choice, machine, env_paths)
    data = load_local(files, fmt)
    runs = data.runs.copy()
    if history:
        runs["job"] = HISTORY_JOB
    if machine is not None:
        runs["machine"] = machine
    if workers is not None:
        runs["xdist_workers"] = workers
    try:
        report = fit_machines(
            runs, data.results, catalogue, headroom=headroom, wait_target_s=wait_target_s
        )
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        echo_json(answers.SizingReport.of(report))
        return
    render(report, report_console())


def _money(value: float | None, unit: str) -> str:
    if value is None:
        return "?"
    return f"${value:.4f}" if unit == "USD" else f"{value:.2f} {unit}"


def render(report: SizingReport, console: Console) -> None:
    """Human-readable table of the report."""
    table = Table(title=f"Machine sizing ({report.catalogue}, headroom x{report.headroom:g})")
    for column in ("job", "today", "need", "recommended", "wall", "cost/run", "cost/month"):
        table.add_column(column)
    for job in report.jobs:
        need = "?" if job.need_mib is None else f"{job.need_mib / 1024:.1f} GiB"
        rec = "-" if job.recommended is None else job.recommended.name
        wall = format_duration(job.wall_s)
        if job.recommended_wall_s is not None:
            wall += f" -> {format_duration(job.recommended_wall_s)}"
        cost = _money(job.cost_per_run, report.unit)
        monthly = _money(job.cost_per_month, report.unit)
        if job.recommended is not None:
            cost += f" -> {_money(job.recommended_cost_per_run, report.unit)}"
            monthly += f" -> {_money(job.recommended_cost_per_month, report.unit)}"
        today = f"{job.machine or '?'} ({job.workers} worker{'s' if job.workers > 1 else ''})"
        table.add_row(job.job, today, need, rec, wall, cost, monthly)
    console.print(table)
    console.print(
        f"pipeline wait {format_duration(report.wait_s)} -> "
        f"{format_duration(report.wait_after_s)} (target {format_duration(report.wait_target_s)})"
    )
    for job in report.jobs:
        console.print(
            f"[bold]{escape(job.job)}[/bold]: {escape(job.advice)}", highlight=False, soft_wrap=True
        )
        console.print(
            f"  memory need from: {job.memory_basis}", markup=False, highlight=False, soft_wrap=True
        )
        for nodeid, peak in job.peak_tests:
            console.print(f"  peak {peak:.0f} MiB: {nodeid}", markup=False, highlight=False)
        for note in job.notes:
            console.print(f"  note: {note}", markup=False, highlight=False, soft_wrap=True)
    if report.unknown_machines:
        console.print(
            f"unknown machine types (not priced): {', '.join(report.unknown_machines)}",
            markup=False,
        )
    for warning in report.warnings:
        console.print(f"warning: {warning}", markup=False, highlight=False)
