"""`laptime changes` and `laptime change-state`: what got slower, on the configured database."""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import get_args

import click
from sqlalchemy import Connection

from app.cli.admin_cmds import on_project
from app.project_records import Project
from app.schemas.changes import (
    ChangeKind,
    ChangeList,
    ChangeModel,
    ChangeSort,
    ChangeStateSet,
    DefaultBranchSet,
)
from app.services.changes import (
    ChangeNotFound,
    ChangeQuery,
    change_list,
    default_branch,
    set_default_branch,
    set_state,
)

STATES = ("open", "acknowledged", "resolved")


def _commits(change: ChangeModel) -> str:
    before = (change.commit_before or "?")[:12]
    after = (change.commit_after or "?")[:12]
    if change.between == []:
        return f"commit {after} (previous run {before})"
    if change.between is None:
        return f"commits {before}..{after} (what lies between is unknown)"
    more = "" if change.between_complete else "+"
    return f"commits {before}..{after} ({len(change.between)}{more} between)"


def changes_text(answer: ChangeList) -> str:
    """The answer as lines people read, in the answer's order."""
    lines = [f"default branch: {answer.default_branch or 'none'}; {len(answer.changes)} changes"]
    for c in answer.changes:
        sign = "+" if c.delta_s >= 0 else ""
        job = f" ({c.job})" if c.job else ""  # a pipeline's change is of no one job
        lines.append(
            f"change {c.id} [{c.state}] {c.kind} {c.name}{job}: "
            f"{sign}{c.delta_s:.3f}s per run, "
            f"{c.median_before_s:.3f}s -> {c.median_after_s:.3f}s ({sign}{c.relative:.0%}), "
            f"{_commits(c)}, {c.at_after:%Y-%m-%d}"
        )
        if c.per_week_s is not None:
            cost = "" if c.per_week_cost is None else f", ${c.per_week_cost:+,.2f}"
            lines.append(f"    per week: {c.per_week_s:+.1f}s of machine time{cost}")
        if c.pull_requests:
            lines.append("    requests: " + " ".join(f"#{n}" for n in c.pull_requests))
        lines += [f"    bisect: {step.command}" for step in c.bisect]
    return "\n".join(lines)


@click.command()
@click.option("--project", "slug", required=True, help="Project slug.")
@click.option("--state", type=click.Choice(STATES), help="Only changes in this state.")
@click.option("--since", type=click.DateTime(["%Y-%m-%d"]), help="First run after on or after.")
@click.option("--kind", type=click.Choice(get_args(ChangeKind)), help="Only this kind.")
@click.option("--test", multiple=True, help="Only changes of this test (nodeid); repeatable.")
@click.option("--file", "file_", multiple=True, help="Only this file or its tests; repeatable.")
@click.option("--job", multiple=True, help="Only changes in this job; repeatable.")
@click.option(
    "--min-delta",
    type=click.FloatRange(min=0),
    help="Only steps of at least this many seconds per run (slower or faster).",
)
@click.option(
    "--min-relative",
    type=click.FloatRange(min=0),
    help="Only steps of at least this share of the time before (0.2: 20%), either way.",
)
@click.option(
    "--sort",
    type=click.Choice(get_args(ChangeSort)),
    default="per_run",
    show_default=True,
    help="The most time added per run first, machine time a week, or money a week.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the API's JSON answer.")
def changes(
    slug: str,
    state: str | None,
    since: datetime | None,
    kind: str | None,
    test: tuple[str, ...],
    file_: tuple[str, ...],
    job: tuple[str, ...],
    min_delta: float | None,
    min_relative: float | None,
    sort: str,
    as_json: bool,
) -> None:
    """Lasting steps in durations on the default branch, the most added first (`--sort`)."""
    day: date | None = since.date() if since else None
    query = ChangeQuery(
        state=state,
        since=day,
        kind=kind,
        tests=tuple(test),
        files=tuple(file_),
        jobs=tuple(job),
        min_delta_s=min_delta,
        min_relative=min_relative,
    )

    def answer_of(conn: Connection, project: Project) -> ChangeList:
        return ChangeList.of(change_list(conn, project, query, sort))

    answer = on_project(slug, answer_of)
    if as_json:
        click.echo(json.dumps(answer.model_dump(mode="json"), indent=2))
    else:
        click.echo(changes_text(answer))


@click.command("change-state")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.argument("change_id", type=int)
@click.argument("state", type=click.Choice(STATES))
def change_state(slug: str, change_id: int, state: str) -> None:
    """Set a change's state: acknowledged (expected), resolved, or open again."""

    def set_it(conn: Connection, project: Project) -> ChangeStateSet:
        try:
            return ChangeStateSet.of(set_state(conn, project, change_id, state))
        except ChangeNotFound as exc:
            raise click.ClickException(str(exc)) from exc

    done = on_project(slug, set_it)
    click.echo(f"change {done.id}: {done.state}")


@click.command("default-branch")
@click.option("--project", "slug", required=True, help="Project slug.")
@click.argument("branch", required=False)
@click.option("--clear", is_flag=True, help="Forget the name: detect the branch again.")
def default_branch_cmd(slug: str, branch: str | None, clear: bool) -> None:
    """Show or name the branch watched for changes (uploads from now on are watched on it)."""
    if branch is not None and clear:
        raise click.UsageError("name a branch or --clear, not both")
    if branch is not None and not branch.strip():
        raise click.UsageError("a branch name cannot be empty")

    def act(conn: Connection, project: Project) -> DefaultBranchSet:
        if branch is None and not clear:
            return DefaultBranchSet.of(default_branch(conn, project))
        return DefaultBranchSet.of(set_default_branch(conn, project, branch))

    chosen = on_project(slug, act)
    where = "set" if chosen.override is not None else "detected"
    click.echo(f"{chosen.default_branch or '(none yet)'} ({where})")
