"""`laptime webhook`: register, list and remove a project's webhooks, see their deliveries,
send what is due now."""

from __future__ import annotations

import json
from dataclasses import asdict

import click
from sqlalchemy import Connection

from analysis.errors import AnswerError
from app.cli.admin_cmds import on_project
from app.cli.database import open_database
from app.db.engine import make_engine
from app.project_records import Project
from app.services.webhooks import (
    STATES,
    WebhookInfo,
    add_webhook,
    deliver_due,
    list_deliveries,
    list_webhooks,
    remove_webhook,
)
from app.settings import Settings
from notify.events import EVENTS, FORMATS


@click.group()
def webhook() -> None:
    """Manage webhooks: signed JSON (or Slack) deliveries of laptime's events."""


@webhook.command("add")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.argument("url")
@click.option(
    "--event",
    "events",
    multiple=True,
    type=click.Choice(sorted(EVENTS)),
    help="An event it hears (repeat; default: all).",
)
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="json", show_default=True)
def webhook_add(slug: str, url: str, events: tuple[str, ...], fmt: str) -> None:
    """Register URL; prints the webhook and its signing secret, once, alone on the last line."""

    def add(conn: Connection, project: Project) -> tuple[WebhookInfo, str]:
        try:
            return add_webhook(
                conn,
                project,
                url,
                events=events or None,
                fmt=fmt,
                allow_private=Settings().webhook_allow_private,
            )
        except AnswerError as exc:
            raise click.ClickException(str(exc)) from exc

    info, secret = on_project(slug, add)
    click.echo(f"webhook {info.id}: {info.url} ({info.format}: {', '.join(info.events)})")
    click.echo("signing secret (shown once; the receiver checks X-Laptime-Signature with it):")
    click.echo(secret)


@webhook.command("list")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def webhook_list(slug: str, as_json: bool) -> None:
    """The project's webhooks (secrets shown by their first characters only)."""
    found = on_project(slug, list_webhooks)
    if as_json:
        click.echo(json.dumps([asdict(w) for w in found], indent=2, default=str))
        return
    for w in found:
        click.echo(f"{w.id}\t{w.url}\t{w.format}\t{','.join(w.events)}\tsecret {w.secret_prefix}…")


@webhook.command("remove")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.argument("webhook_id", type=int)
def webhook_remove(slug: str, webhook_id: int) -> None:
    """Remove a webhook and its deliveries."""

    def remove(conn: Connection, project: Project) -> None:
        try:
            remove_webhook(conn, project, webhook_id)
        except AnswerError as exc:
            raise click.ClickException(str(exc)) from exc

    on_project(slug, remove)
    click.echo(f"removed webhook {webhook_id}")


@webhook.command("deliveries")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--state", type=click.Choice(STATES), help="Only deliveries in this state.")
@click.option("--webhook", "webhook_id", type=int, help="Only this webhook's.")
@click.option("--limit", type=click.IntRange(1, 1000), default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def webhook_deliveries(
    slug: str, state: str | None, webhook_id: int | None, limit: int, as_json: bool
) -> None:
    """The newest deliveries: state, attempts, the receiver's last answer."""
    found = on_project(
        slug,
        lambda conn, project: list_deliveries(
            conn, project, webhook_id=webhook_id, state=state, limit=limit
        ),
    )
    if as_json:
        click.echo(json.dumps([asdict(d) for d in found], indent=2, default=str))
        return
    for d in found:
        last = d.last_error or (f"HTTP {d.last_status}" if d.last_status else "")
        click.echo(
            f"{d.id}\twebhook {d.webhook_id}\t{d.event}\t{d.state}\tattempts {d.attempts}\t{last}"
        )


@webhook.command("deliver")
def webhook_deliver() -> None:
    """Send every delivery due now, once each (the workers do this by themselves)."""
    settings = Settings()
    with open_database(settings) as url:
        engine = make_engine(url, pool_size=1)
        try:
            tried = 0
            while sent := deliver_due(engine, settings.webhook_policy):
                tried += sent
        finally:
            engine.dispose()
    click.echo(f"{tried} attempts made")
