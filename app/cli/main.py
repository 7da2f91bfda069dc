"""The `laptime` command: one click group; each subcommand lives in its own module."""

from __future__ import annotations

import importlib

import click

# (module, attribute) of every subcommand, imported lazily so `laptime parse` never pays
# for FastAPI or SQLAlchemy.
COMMANDS: dict[str, tuple[str, str]] = {
    "parse": ("app.cli.parse_cmd", "parse"),
    "analyze": ("app.cli.analyze_cmd", "analyze"),
    "plan": ("app.cli.plan_cmd", "plan"),
    "accuracy": ("app.cli.accuracy_cmd", "accuracy"),
    "compare": ("app.cli.compare_cmd", "compare"),
    "queue": ("app.cli.queue_cmd", "queue"),
    "flaky": ("app.cli.flaky_cmd", "flaky"),
    "flaky-reset": ("app.cli.quarantine_cmd", "flaky_reset"),
    "quarantine": ("app.cli.quarantine_cmd", "quarantine"),
    "changes": ("app.cli.changes_cmd", "changes"),
    "change-state": ("app.cli.changes_cmd", "change_state"),
    "default-branch": ("app.cli.changes_cmd", "default_branch_cmd"),
    "shard": ("app.cli.shard_cmd", "shard"),
    "size": ("app.cli.size_cmd", "size"),
    "reduce": ("app.cli.reduce_cmd", "reduce"),
    "serve": ("app.cli.server_cmds", "serve"),
    "worker": ("app.cli.server_cmds", "worker"),
    "migrate": ("app.cli.server_cmds", "migrate"),
    "project": ("app.cli.admin_cmds", "project"),
    "token": ("app.cli.admin_cmds", "token"),
    "prune": ("app.cli.admin_cmds", "prune"),
    "upload": ("app.cli.upload_cmd", "upload"),
    "demo-data": ("app.cli.demo_cmd", "demo_data"),
    "webhook": ("app.cli.webhook_cmd", "webhook"),
    "digest": ("app.cli.digest_cmd", "digest"),
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when invoked or listed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module = importlib.import_module(target[0])
        command = getattr(module, target[1])
        assert isinstance(command, click.Command)
        return command


@click.group(cls=LazyGroup)
@click.version_option(package_name="laptime")
def cli() -> None:
    """laptime: where your CI time goes, and what to change."""


def main() -> None:
    """Console-script entry point."""
    cli()
