"""`laptime project`, `laptime token`, `laptime prune`: administration on the database."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import click

from app.cli.database import open_database
from app.db.engine import make_engine
from app.db.projects import ProjectError, create_project, create_token, get_project
from app.settings import Settings


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


@token.command("create")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option(
    "--scope", type=click.Choice(["upload", "read", "admin"]), default="read", show_default=True
)
def token_create(slug: str, scope: str) -> None:
    """Create a token for a project; prints it once, alone on the last line."""
    settings = Settings()
    with open_database(settings) as url:
        engine = make_engine(url, pool_size=1)
        try:
            with engine.begin() as conn:
                found = get_project(conn, slug)
                if found is None:
                    raise click.ClickException(f"no project {slug!r}")
                value = create_token(conn, found, scope)
        finally:
            engine.dispose()
    click.echo(f"{scope} token for {slug} (shown once):")
    click.echo(value)


def parse_age(text: str) -> timedelta:
    """`90d`, `12w`, `36h` -> timedelta."""
    match = re.fullmatch(r"\s*(\d+)\s*([dwh])\s*", text)
    if not match:
        raise click.BadParameter(f"{text!r}: use a number and d, w or h, like 90d")
    value, unit = int(match.group(1)), match.group(2)
    return {"d": timedelta(days=value), "w": timedelta(weeks=value), "h": timedelta(hours=value)}[
        unit
    ]


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
