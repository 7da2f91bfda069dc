"""`laptime digest`: a project's week against the week before, as markdown."""

from __future__ import annotations

import json
from datetime import datetime

import click

from app.cli.admin_cmds import on_project
from app.schemas.webhooks import Digest
from app.services.digest import digest_answer


@click.command()
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option(
    "--week",
    type=click.DateTime(formats=["%Y-%m-%d"]),
    help="A day of the week wanted (default: the last week that has ended).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def digest(slug: str, week: datetime | None, as_json: bool) -> None:
    """The weekly digest: CI test time against the week before, the tests and files that
    grew most per run."""
    answer = on_project(
        slug, lambda conn, project: digest_answer(conn, project, week.date() if week else None)
    )
    if as_json:
        click.echo(json.dumps(Digest.of(answer).model_dump(mode="json"), indent=2))
    else:
        click.echo(answer.text, nl=False)
