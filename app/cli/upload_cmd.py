"""`laptime upload`: send report files to a laptime server from a CI job; `laptime upload
retry ID` puts a failed upload back in the queue.

A click front-end over the CI client (laptime_ci): the sending, retrying and printing happen
there, once. Unlike `laptime-ci upload`, this command exits 1 when the upload fails.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import click

from laptime_ci.labels import parse_labels
from laptime_ci.send import send_and_report
from laptime_ci.upload import UploadError, metadata_from_env, retry_upload

SEND = "send"


def _read_files(paths: tuple[str, ...]) -> list[tuple[str, bytes]]:
    files: list[tuple[str, bytes]] = []
    for raw in paths:
        path = Path(raw)
        try:
            files.append((path.name, path.read_bytes()))
        except OSError as exc:
            raise click.ClickException(f"{path}: cannot read: {exc.strerror or exc}") from exc
    return files


class _UploadGroup(click.Group):
    """`laptime upload FILES...` is `laptime upload send FILES...`: the subcommands (`retry`)
    are the only first words not read as a file (a file named like one: `./retry`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = [SEND, *args]
        return super().parse_args(ctx, args)


@click.group(cls=_UploadGroup)
def upload() -> None:
    """Send report files (`laptime upload FILES...`) or re-queue a failed upload."""


def _server(url: str | None, token: str | None) -> tuple[str, str]:
    env = os.environ
    url = url or env.get("LAPTIME_URL")
    token = token or env.get("LAPTIME_TOKEN")
    if not url:
        raise click.ClickException("no server: pass --url or set LAPTIME_URL")
    if not token:
        raise click.ClickException("no token: pass --token or set LAPTIME_TOKEN")
    return url, token


@upload.command(SEND)
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--job", help="Job name (default: from the CI environment or LAPTIME_JOB).")
@click.option("--machine", help="Machine type or resource class (default: LAPTIME_MACHINE).")
@click.option("--label", "labels", multiple=True, metavar="K=V", help="A run label; repeatable.")
@click.option("--commit", help="Commit SHA (default: from the CI environment).")
@click.option("--branch", help="Branch (default: from the CI environment).")
@click.option("--pipeline", help="Pipeline run id grouping this job with its siblings.")
@click.option("--started-at", help="Job start, ISO 8601.")
@click.option("--wall-s", type=float, help="The job's wall time in seconds, setup included.")
@click.option("--peak-rss-mib", type=float, help="The job's peak memory in MiB.")
@click.option("--idempotency-key", help="Default: from pipeline, job and the files' content.")
@click.option("--url", help="Server URL (default: LAPTIME_URL).")
@click.option("--token", help="API token with the upload scope (default: LAPTIME_TOKEN).")
@click.option("--wait", is_flag=True, help="Poll until the server has processed the upload.")
@click.option("--retries", type=click.IntRange(0, 10), default=4, show_default=True)
@click.option("--poll-interval", "poll_s", type=float, default=1.0, hidden=True)
def send(
    files: tuple[str, ...],
    job: str | None,
    machine: str | None,
    labels: tuple[str, ...],
    commit: str | None,
    branch: str | None,
    pipeline: str | None,
    started_at: str | None,
    wall_s: float | None,
    peak_rss_mib: float | None,
    idempotency_key: str | None,
    url: str | None,
    token: str | None,
    wait: bool,
    retries: int,
    poll_s: float,
) -> None:
    """Upload test reports (JUnit XML, --durations text, laptime JSON) as one CI job's run."""
    url, token = _server(url, token)
    try:
        extra_labels = parse_labels(labels)
        base = metadata_from_env(os.environ)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from exc
    metadata = replace(
        base,
        commit=commit or base.commit,
        branch=branch or base.branch,
        pipeline=pipeline or base.pipeline,
        job=job or base.job,
        machine=machine or base.machine,
        labels={**base.labels, **extra_labels},
        started_at=started_at,
        wall_s=wall_s,
        peak_rss_mib=peak_rss_mib,
        idempotency_key=idempotency_key,
    )
    payload = _read_files(files)
    try:
        send_and_report(
            payload,
            url=url,
            token=token,
            metadata=metadata,
            echo=lambda line, err: click.echo(line, err=err),
            retries=retries,
            wait=wait,
            poll_s=poll_s,
            project=os.environ.get("LAPTIME_PROJECT"),
        )
    except UploadError as exc:
        raise click.ClickException(exc.message) from exc


@upload.command()
@click.argument("upload_id", type=click.IntRange(min=1), metavar="ID")
@click.option("--url", help="Server URL (default: LAPTIME_URL).")
@click.option("--token", help="Upload or admin token of the project (default: LAPTIME_TOKEN).")
def retry(upload_id: int, url: str | None, token: str | None) -> None:
    """Put failed upload ID back in the queue; its attempts start again from zero."""
    url, token = _server(url, token)
    try:
        answer = retry_upload(url, upload_id, token=token)
    except UploadError as exc:
        raise click.ClickException(exc.message) from exc
    click.echo(f"upload {answer.get('id')}: {answer.get('status')} {answer.get('url')}")
