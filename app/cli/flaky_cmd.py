"""`laptime flaky`: flaky tests ranked by cost, on the configured database."""

from __future__ import annotations

import json

import click
from sqlalchemy import Connection

from app.cli.admin_cmds import on_project
from app.project_records import Project
from app.schemas.flaky import Flaky, FlakyCost, flaky_answer
from app.services.flaky import DEFAULT_TESTS, MAX_TESTS, project_flaky
from app.services.project_reads import window_filters
from figures.humanize import count_text, duration_text, money_text, percent_text


def cost_text(cost: FlakyCost) -> str:
    """One cost as people read it (the page spells its cells the same way)."""
    money = money_text(cost.usd) if cost.usd is not None else "unpriced"
    return (
        f"machine {duration_text(cost.machine_s)} (reruns {duration_text(cost.rerun_s)}, "
        f"job retries {duration_text(cost.job_retry_s)}, pipeline re-runs "
        f"{duration_text(cost.pipeline_rerun_s)}), wait {duration_text(cost.wait_s)}, {money}"
    )


def flaky_text(answer: Flaky) -> str:
    """The answer as lines people read."""
    lines = [
        f"flaky tests: {count_text(answer.tests_total)} "
        f"({count_text(answer.results)} results read)",
        f"total: {cost_text(answer.total)}",
        f"this week: {cost_text(answer.this_week)}",
    ]
    for test in answer.tests:
        mark = " [quarantined]" if test.quarantined else ""
        lines.append(
            f"  {test.nodeid}{mark}: {count_text(test.flaky_runs)}/{count_text(test.runs)} "
            f"flaky ({percent_text(test.rate)}); {cost_text(test.cost)}"
        )
    for title, rows in (("by file", answer.by_file), ("by job", answer.by_job)):
        lines.append(f"{title}:")
        lines += [f"  {row.key or '–'}: {cost_text(row)}" for row in rows]
    lines.append("by week:")
    lines += [f"  {row.key}: {cost_text(row)}" for row in answer.by_week]
    return "\n".join(lines)


@click.command()
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--days", default=30, show_default=True, type=click.IntRange(1, 3650))
@click.option("--branch", multiple=True, help="Only runs of this branch (repeatable).")
@click.option(
    "--limit", default=DEFAULT_TESTS, show_default=True, type=click.IntRange(1, MAX_TESTS)
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def flaky(slug: str, days: int, branch: tuple[str, ...], limit: int, as_json: bool) -> None:
    """Flaky tests, most costly first: machine time, dollars and developer wait they cost."""

    def answer_of(conn: Connection, project: Project) -> Flaky:
        read = project_flaky(conn, project, window_filters(days, branches=branch))
        return flaky_answer(read, limit=limit)

    answer = on_project(slug, answer_of)
    click.echo(
        json.dumps(answer.model_dump(mode="json"), indent=2) if as_json else flaky_text(answer)
    )
