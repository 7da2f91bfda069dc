"""`laptime accuracy`: did the plans come true, on the configured database."""

from __future__ import annotations

import json
from typing import Any

import click
from sqlalchemy import Connection

from app.cli.admin_cmds import on_project
from app.project_records import Project
from app.schemas.accuracy import AccuracyAnswer, accuracy_answer
from app.services.plan_accuracy import MAX_PLANS, PlanNotFound, accuracy_report
from figures.humanize import duration_text


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:+.1f}%"


def _seconds(value: float | None) -> str:
    return "–" if value is None else duration_text(value)


def _line(label: str, figure: dict[str, Any]) -> str:
    return (
        f"{label}: predicted {_seconds(figure['predicted'])}, measured "
        f"{_seconds(figure['measured'])} ({_pct(figure['error_pct'])})"
    )


def accuracy_text(answer: AccuracyAnswer) -> str:
    """The answer as lines people read: per plan and pipeline, each job and the totals."""
    doc = answer.model_dump(mode="json")
    lines = []
    for plan in doc["plans"]:
        lines.append(f"{plan['kind']} plan {plan['plan_id']} ({len(plan['jobs'])} jobs)")
        if not plan["pipelines"]:
            lines.append("  no pipeline has run it")
        for pipeline in plan["pipelines"]:
            partial = "" if pipeline["complete"] else " (not every job reported)"
            lines.append(f"  pipeline {pipeline['pipeline']}{partial}")
            lines.extend(f"    {_line(job['name'], job['wall_s'])}" for job in pipeline["jobs"])
            lines.append(f"    {_line('wait', pipeline['wait_s'])}")
            lines.append(f"    {_line('machine time', pipeline['machine_s'])}")
            mean = pipeline["mean_abs_error_pct"]
            lines.append(f"    mean per-job error {'–' if mean is None else f'{mean:.1f}%'}")
    if not doc["plans"]:
        lines.append("no plan has been run yet: upload the planned jobs' reports with --plan-id")
    calibration = doc["calibration"]
    lines.append(
        f"calibration: setup x{calibration['setup_factor']:.2f}, tests "
        f"x{calibration['test_factor']:.2f}; {calibration['text']}"
    )
    return "\n".join(lines)


@click.command()
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--plan", "plan_id", default=None, help="One plan's id (default: the newest).")
@click.option(
    "--limit", type=click.IntRange(1, MAX_PLANS), default=20, show_default=True, help="Plans."
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def accuracy(slug: str, plan_id: str | None, limit: int, as_json: bool) -> None:
    """Did the plans come true: predicted vs measured wall per job, wait and machine time."""

    def report(conn: Connection, project: Project) -> AccuracyAnswer:
        try:
            return accuracy_answer(*accuracy_report(conn, project, plan_id=plan_id, limit=limit))
        except PlanNotFound as exc:
            raise click.ClickException(f"no plan {plan_id!r} in project {slug!r}") from exc

    answer = on_project(slug, report)
    click.echo(
        json.dumps(answer.model_dump(mode="json"), indent=2) if as_json else accuracy_text(answer)
    )
