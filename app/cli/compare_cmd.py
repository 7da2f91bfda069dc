"""`laptime compare`: a pipeline against the base branch, on the configured database."""

from __future__ import annotations

import json

import click
from sqlalchemy import Connection

from analysis.errors import AnswerError
from app.cli.admin_cmds import on_project
from app.project_records import Project
from app.schemas.compare import Compare
from app.services.compare import PipelineUnknown, compare_pipeline


def _vs(value: float | None, median: float | None, spread: float | None) -> str:
    if value is None or median is None:
        return "unknown"
    return f"{value:.1f}s vs {median:.1f}s (±{spread or 0:.1f}s)"


def _money(value: float | None, unit: str) -> str:
    if value is None:
        return "unknown"
    return f"${value:.4f}" if unit == "USD" else f"{value:.4f} {unit}"


def cost_lines(answer: Compare) -> list[str]:
    """Machine time, its cost and whether the stored split plan still fits."""
    m = answer.machine_time
    lines = [f"machine time: {_vs(m.here, m.base_median, m.base_spread)}"]
    if answer.cost is None:
        unpriced = ", ".join(answer.unpriced_machines) or "none"
        lines.append(f"cost: unknown (no catalogue price for machine: {unpriced})")
    else:
        c = answer.cost
        sign = "" if c.delta is None else "+" if c.delta >= 0 else "-"
        change = sign + _money(None if c.delta is None else abs(c.delta), c.unit)
        lines.append(
            f"cost: {_money(c.here, c.unit)} vs {_money(c.base_median, c.unit)} per run "
            f"(change {change})"
        )
    fit = answer.plan_fit
    if fit is not None and fit.fits:
        lines.append(f"split plan {fit.plan_id}: still fits its {fit.target_wait_s:.1f}s wait")
    elif fit is not None:
        lines.append(
            f"split plan {fit.plan_id} no longer fits: its target wait is "
            f"{fit.target_wait_s:.1f}s, now {fit.wait_s:.1f}s"
        )
        lines += [
            f"  job {o.index} {o.name}: {o.planned_wall_s:.1f}s -> {o.wall_s:.1f}s "
            f"({o.overrun_s:.1f}s over the target wait)"
            for o in fit.overruns
        ]
    return lines


def compare_text(answer: Compare) -> str:
    """The answer as lines people read."""
    lines = [
        f"pipeline {answer.pipeline} vs {answer.base} ({answer.base_runs} base runs)",
        f"wall: {_vs(answer.wall.here, answer.wall.base_median, answer.wall.base_spread)}",
        "test time: "
        + _vs(answer.test_time.here, answer.test_time.base_median, answer.test_time.base_spread),
        *cost_lines(answer),
    ]
    for title, moves in (("slower", answer.slower), ("faster", answer.faster)):
        lines += [f"{title}: {len(moves)}"]
        lines += [f"  {m.nodeid}: {m.here_s:.2f}s (base {m.base_median_s:.2f}s)" for m in moves]
    lines.append(f"new tests: {len(answer.new_tests)}")
    lines += [f"  {m.nodeid}: {m.here_s:.2f}s" for m in answer.new_tests]
    for title, names in (
        ("removed tests", answer.removed_tests),
        ("new failures", answer.new_failures),
        ("new flaky", answer.new_flaky),
        ("quarantined failures (not failing the job)", answer.quarantined_failures),
        ("known flaky", answer.flaky),
    ):
        lines.append(f"{title}: {len(names)}")
        lines += [f"  {name}" for name in names]
    return "\n".join(lines)


@click.command()
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--pipeline", required=True, help="CI pipeline id, as the uploads recorded it.")
@click.option("--base", default="main", show_default=True, help="Base branch.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def compare(slug: str, pipeline: str, base: str, as_json: bool) -> None:
    """What a pipeline changed against the base branch's recent runs of the same cell."""

    def answer_of(conn: Connection, project: Project) -> Compare:
        try:
            return Compare.of(compare_pipeline(conn, project, pipeline, base))
        except (PipelineUnknown, AnswerError) as exc:
            raise click.ClickException(str(exc)) from exc

    answer = on_project(slug, answer_of)
    click.echo(
        json.dumps(answer.model_dump(mode="json"), indent=2) if as_json else compare_text(answer)
    )
