"""`laptime queue`: a pipeline's queue on the configured database (what ran where, budget
stops, retries, tests run twice or nowhere)."""

from __future__ import annotations

import json
import sys

import click
from sqlalchemy import Connection

from app.cli.admin_cmds import on_project
from app.project_records import Project
from app.schemas.queues import QueueStatus
from app.services.queue_answers import QueueState
from app.services.queues import QueueNotFound, list_queues, pipeline_queue_status


def _s(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} s"


def queue_text(state: QueueState) -> str:
    """The report as lines people read: each node's batches, then what went wrong."""
    report = state.report
    lines = [
        f"queue {state.queue_id} of pipeline {state.pipeline} ({state.runner}, "
        f"{report.tests} tests, {state.planned_nodes} nodes planned)",
        f"wait {_s(report.wait_s)}, idle tail {_s(report.idle_tail_s)}, "
        f"{report.pending_items} items pending, {report.open_claims} claims open",
    ]
    for node in report.nodes:
        lines.append(f"  node {node.node}: done at {_s(node.finish_s)}")
        for batch in node.batches:
            flags = " replay" if batch.replay else ""
            lines.append(
                f"    #{batch.claim_id} attempt {batch.attempt} {batch.state}{flags}: "
                f"{batch.tests} tests, predicted {_s(batch.predicted_s)}, "
                f"{_s(batch.claimed_s)} -> {_s(batch.finished_s)}"
            )
    for stop in report.budget_stops:
        lines.append(
            f"  budget stop: node {stop.node} at {_s(stop.at_s)} with "
            f"{_s(stop.remaining_s)} left; did not fit: {', '.join(stop.not_run) or '–'}"
        )
    if report.ran_twice:
        lines.append(
            f"  ran twice: {len(report.ran_twice)} tests "
            f"({report.rerun_by_retry} replayed by a retried job)"
        )
        lines.extend(f"    {t.nodeid}: {', '.join(t.runs)}" for t in report.ran_twice)
    if report.never_ran:
        lines.append(f"  ran nowhere: {len(report.never_ran)} tests")
        lines.extend(f"    {n}" for n in report.never_ran)
    return "\n".join(lines)


@click.group()
def queue() -> None:
    """Queue mode: the pipelines' queues."""


@queue.command("show")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--pipeline", required=True, help="The pipeline's id.")
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def show(slug: str, pipeline: str, as_json: bool) -> None:
    """Each node's batches, budget stops, retries, tests run twice; exit 1 when a test ran
    on no node."""

    def report(conn: Connection, project: Project) -> QueueState:
        try:
            return pipeline_queue_status(conn, project, pipeline)
        except QueueNotFound as exc:
            raise click.ClickException(str(exc)) from exc

    state = on_project(slug, report)
    if as_json:
        click.echo(json.dumps(QueueStatus.of(state).model_dump(mode="json"), indent=2))
    else:
        click.echo(queue_text(state))
    if state.report.never_ran:
        sys.exit(1)


@queue.command("list")
@click.option("--project", "slug", required=True, help="Project slug.")
def list_cmd(slug: str) -> None:
    """The project's newest queues."""
    for q in on_project(slug, list_queues):
        click.echo(
            f"{q.queue_id}\t{q.pipeline}\t{q.runner}\t{q.nodes} nodes\t{q.opened_at.isoformat()}"
        )
