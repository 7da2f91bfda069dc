"""`laptime project`, `laptime token`, `laptime prune`: administration on the database."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import click
from sqlalchemy import Connection

from analysis.durations import parse_duration_s
from app.cli.database import open_database
from app.db.engine import make_engine
from app.db.projects import create_project, create_token, get_project, list_tokens, revoke_token
from app.project_records import Project, ProjectError
from app.settings import Settings

T = TypeVar("T")


@click.group()
def project() -> None:
    """Manage projects."""


@project.command("create")
@click.argument("name")
@click.option("--public", is_flag=True, help="Let anyone read the dashboard and API.")
def project_create(name: str, public: bool) -> None:
    """Create a project; prints its upload token, once, alone on the last line."""
    settings = Settings()
    with open_database(settings) as url:
        engine = make_engine(url, pool_size=1)
        try:
            with engine.begin() as conn:
                created = create_project(conn, name, public=public)
                token = create_token(conn, created, "upload")
        except ProjectError as exc:
            raise click.ClickException(str(exc)) from exc
        finally:
            engine.dispose()
    click.echo(f"created project {created.slug}")
    click.echo("upload token (shown once; store it as LAPTIME_TOKEN in CI):")
    click.echo(token)


@click.group()
def token() -> None:
    """Manage API tokens."""


def on_project(slug: str, action: Callable[[Connection, Project], T]) -> T:
    """Run `action` on project `slug` in one transaction of the configured database."""
    settings = Settings()
    with open_database(settings) as url:
        engine = make_engine(url, pool_size=1)
        try:
            with engine.begin() as conn:
                found = get_project(conn, slug)
                if found is None:
                    raise click.ClickException(f"no project {slug!r}")
                return action(conn, found)
        except ProjectError as exc:
            raise click.ClickException(str(exc)) from exc
        finally:
            engine.dispose()


@token.command("create")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option(
    "--scope", type=click.Choice(["upload", "read", "admin"]), default="read", show_default=True
)
@click.option("--expires", help="Lifetime like 90d, 12w or 36h (default: never expires).")
def token_create(slug: str, scope: str, expires: str | None) -> None:
    """Create a token for a project; prints it once, alone on the last line."""
    expires_at = datetime.now(UTC) + parse_age(expires) if expires else None
    value = on_project(
        slug, lambda conn, found: create_token(conn, found, scope, expires_at=expires_at)
    )
    until = f", expires {expires_at:%Y-%m-%d %H:%M} UTC" if expires_at else ""
    click.echo(f"{scope} token for {slug}{until} (shown once):")
    click.echo(value)


@token.command("list")
@click.option("--project", "slug", required=True, help="Project slug.")
def token_list(slug: str) -> None:
    """List a project's tokens: id, scope, the first characters, state (never the secret)."""
    tokens = on_project(slug, list_tokens)
    click.echo(f"{'id':>6}  {'scope':<7} {'prefix':<13} {'created':<17} {'expires':<17} state")
    for t in tokens:
        state = "revoked" if t.revoked_at else "active" if t.active else "expired"
        click.echo(
            f"{t.id:>6}  {t.scope:<7} {t.prefix:<13} {_when(t.created_at):<17} "
            f"{_when(t.expires_at):<17} {state}"
        )


@token.command("revoke")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.argument("token_id", type=int)
def token_revoke(slug: str, token_id: int) -> None:
    """Revoke a token by id (see `laptime token list`): it answers 401 from now on."""
    if not on_project(slug, lambda conn, found: revoke_token(conn, found, token_id)):
        raise click.ClickException(f"project {slug!r} has no active token {token_id}")
    click.echo(f"revoked token {token_id} of {slug}")


def _when(moment: datetime | None) -> str:
    return f"{moment.astimezone(UTC):%Y-%m-%d %H:%M}" if moment else "never"


def parse_age(text: str) -> timedelta:
    """`90d`, `12w`, `36h` -> timedelta."""
    try:
        return timedelta(seconds=parse_duration_s(text, units="wdh"))
    except ValueError as exc:
        raise click.BadParameter(f"{exc}: use a number and d, w or h, like 90d") from None


@click.command()
@click.option("--older-than", "older_than", required=True, help="Age like 90d, 12w.")
@click.option("--dry-run", is_flag=True, help="Say what would be dropped.")
def prune(older_than: str, dry_run: bool) -> None:
    """Drop result partitions and rollups older than the given age (whole days)."""
    from app.db.retention import prune_before

    cutoff = (datetime.now(UTC) - parse_age(older_than)).date()
    settings = Settings()
    with open_database(settings) as url:
        engine = make_engine(url, pool_size=1)
        try:
            with engine.begin() as conn:
                report = prune_before(conn, cutoff, dry_run=dry_run)
        finally:
            engine.dispose()
    verb = "would drop" if dry_run else "dropped"
    click.echo(
        f"{verb} {len(report.partitions)} daily partitions before {cutoff} "
        f"({report.runs} runs, {report.rollup_rows} rollup rows, {report.uploads} raw uploads)"
    )
