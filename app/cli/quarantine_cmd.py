"""`laptime quarantine add|remove|list` and `laptime flaky-reset`, on the configured database."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import click
from sqlalchemy import Connection

from analysis.errors import AnswerError
from app.cli.admin_cmds import on_project
from app.project_records import Project
from app.schemas.quarantine import QuarantineItem
from app.services.quarantine import quarantine_report, quarantine_test, release_test, reset_flaky


@click.group()
def quarantine() -> None:
    """Quarantine flaky tests: they still run and report, their failures do not fail the job."""


@quarantine.command("add")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--reason", default="", help="Why (shown with the entry).")
@click.option("--expires-days", type=click.FloatRange(min=0, min_open=True, max=3650))
@click.option(
    "--release-after", "release_after", type=click.IntRange(1, 10_000),
    help="End the entry after this many clean passes in a row.",
)  # fmt: skip
@click.argument("nodeid")
def quarantine_add(
    slug: str, reason: str, expires_days: float | None, release_after: int | None, nodeid: str
) -> None:
    """Quarantine the test NODEID."""

    def add(conn: Connection, project: Project) -> bool:
        _, existed = quarantine_test(
            conn,
            project,
            nodeid,
            reason=reason,
            expires_in_days=expires_days,
            release_after_runs=release_after,
        )
        return existed

    existed = on_project(slug, add)
    click.echo(f"{'already quarantined' if existed else 'quarantined'}: {nodeid}")


@quarantine.command("remove")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.argument("nodeid")
def quarantine_remove(slug: str, nodeid: str) -> None:
    """End the quarantine of NODEID (the entry and the test's history stay)."""

    def remove(conn: Connection, project: Project) -> None:
        try:
            release_test(conn, project, nodeid)
        except AnswerError as exc:
            raise click.ClickException(str(exc)) from exc

    on_project(slug, remove)
    click.echo(f"released: {nodeid}")


@quarantine.command("list")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--all", "show_all", is_flag=True, help="Also entries that ended.")
@click.option("--json", "as_json", is_flag=True, help="Print the entries as JSON.")
def quarantine_list(slug: str, show_all: bool, as_json: bool) -> None:
    """The quarantined tests, each with its state and quarantined failures."""
    states = on_project(slug, lambda conn, project: quarantine_report(conn, project))
    items = [QuarantineItem.of(s) for s in states if show_all or s.state == "active"]
    if as_json:
        click.echo(json.dumps([i.model_dump(mode="json") for i in items], indent=2))
        return
    for item in items:
        ends = []
        if item.expires_at:
            ends.append(f"expires {item.expires_at:%Y-%m-%d %H:%M}")
        if item.release_after_runs:
            ends.append(f"released after {item.release_after_runs} clean runs")
        click.echo(
            f"{item.nodeid}  {item.state}  since {item.created_at:%Y-%m-%d %H:%M}  "
            f"failures {item.quarantined_failures}  clean runs {item.stable_runs}"
            + (f"  ({', '.join(ends)})" if ends else "")
        )


@click.command("flaky-reset")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--since", type=click.DateTime(), help="Restart from this moment (UTC; default now).")
@click.argument("nodeid")
def flaky_reset(slug: str, since: datetime | None, nodeid: str) -> None:
    """Restart NODEID's flaky statistics (a fix landed): earlier results no longer count."""
    moment = since.replace(tzinfo=UTC) if since else datetime.now(UTC)
    on_project(slug, lambda conn, project: reset_flaky(conn, project, nodeid, moment))
    click.echo(f"flaky statistics of {nodeid} restart at {moment:%Y-%m-%d %H:%M} UTC")
