"""`laptime-ci`: upload reports and pick a shard's tests from CI, never failing the job unless
asked (`--fail-on-error`)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from laptime_ci import __version__
from laptime_ci.compare_cmd import add_parsers as add_compare_parsers
from laptime_ci.compare_cmd import run_comment, run_compare
from laptime_ci.git_history import checkout_history
from laptime_ci.labels import parse_labels
from laptime_ci.quarantine import add_parsers as add_quarantine_parsers
from laptime_ci.quarantine import run_export
from laptime_ci.queue_cmd import add_parsers as add_queue_parsers
from laptime_ci.queue_cmd import run_queue
from laptime_ci.run_handoff import run_wrapped
from laptime_ci.send import IngestFailed, send_and_report
from laptime_ci.shard_record import (
    RECORD_DIR,
    folded_seconds,
    load_record,
    record_files,
    verify_records,
)
from laptime_ci.shards import (
    DEFAULT_CACHE,
    ServerConfig,
    ShardSpecError,
    parse_shard_spec,
    plan_shard,
    read_collected,
    save_durations,
    shard_fallback,
)
from laptime_ci.upload import (
    DEFAULT_MAX_TOTAL_S,
    UploadError,
    UploadMetadata,
    metadata_from_env,
    retry_upload,
)

PREFIX = "laptime-ci"


def _echo(line: str, err: bool) -> None:
    print(line, file=sys.stderr if err else sys.stdout, flush=True)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PREFIX, description=__doc__)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    up = commands.add_parser("upload", help="send report files as one CI job's run")
    up.add_argument("files", nargs="+", metavar="FILE")
    for name, text in (
        ("job", "job name (default: from the CI environment or LAPTIME_JOB)"),
        ("machine", "machine type (default: LAPTIME_MACHINE)"),
        ("commit", "commit SHA (default: from the CI environment)"),
        ("branch", "branch (default: from the CI environment)"),
        ("pipeline", "pipeline run id grouping this job with its siblings"),
        ("started-at", "job start, ISO 8601"),
        ("idempotency-key", "default: from pipeline, job and the files' content"),
        ("url", "server URL (default: LAPTIME_URL)"),
        ("token", "upload token (default: LAPTIME_TOKEN)"),
        ("project", "project slug, for the dashboard link (default: LAPTIME_PROJECT)"),
    ):
        up.add_argument(f"--{name}", help=text)
    up.add_argument("--label", action="append", default=[], metavar="K=V", help="repeatable")
    up.add_argument("--wall-s", type=float, help="the job's wall time in seconds")
    up.add_argument("--peak-rss-mib", type=float, help="the job's peak memory in MiB")
    up.add_argument(
        "--job-wall-s",
        type=float,
        help="the CI job's wall so far, setup included (default: from LAPTIME_JOB_STARTED_AT "
        "or the CI service's job start)",
    )
    up.add_argument("--wait", action="store_true", help="wait for ingest; non-zero if it failed")
    up.add_argument("--plan-id", help="the shard plan this job ran (`laptime-ci shard` prints it)")
    up.add_argument(
        "--backfill",
        action="store_true",
        help="keep the reports' own timestamps however old (importing history)",
    )
    up.add_argument("--retries", type=int, default=4, choices=range(11), metavar="0-10")
    up.add_argument(
        "--max-time-s", type=float, default=DEFAULT_MAX_TOTAL_S, help="bound on all retries"
    )
    up.add_argument("--fail-on-error", action="store_true", help="exit 1 when the upload fails")
    up.add_argument("--poll-interval", type=float, default=1.0, help=argparse.SUPPRESS)

    retry = commands.add_parser("retry", help="put a failed upload back in the queue")
    retry.add_argument("upload_id", type=int, metavar="ID")
    retry.add_argument("--url")
    retry.add_argument("--token")

    shard = commands.add_parser("shard", help="print the nodeids of shard I of N")
    shard.add_argument("--index", type=int, required=True, help="1-based shard number I")
    shard.add_argument("--total", type=int, required=True, help="number of shards N")
    shard.add_argument(
        "--collected", default="-", help="file of nodeids, one a line (default: stdin)"
    )
    shard.add_argument(
        "--cache",
        default=os.environ.get("LAPTIME_SHARD_CACHE", DEFAULT_CACHE),
        help="durations cache for when the server cannot answer",
    )
    shard.add_argument("--url")
    shard.add_argument("--project")
    shard.add_argument("--timeout-s", type=float)

    default_records = str(Path(DEFAULT_CACHE).parent / RECORD_DIR)
    verify = commands.add_parser(
        "shard-verify",
        help="fail (exit 1) when a collected test ran in no shard, or in two that agreed",
    )
    verify.add_argument(
        "records",
        nargs="*",
        metavar="PATH",
        help=f"shard records or directories of them (default: {default_records})",
    )
    fold = commands.add_parser(
        "shard-fold", help="merge the shards' measured seconds into the durations cache"
    )
    fold.add_argument("records", nargs="*", metavar="PATH", help=f"default: {default_records}")
    fold.add_argument(
        "--cache", default=os.environ.get("LAPTIME_SHARD_CACHE", DEFAULT_CACHE), help="the cache"
    )
    run = commands.add_parser(
        "run",
        help="run the tests (laptime-ci run -- pytest ...) and add the process's exit tail "
        "to the plugin's report before it is written and uploaded",
    )
    run.add_argument(
        "argv", nargs=argparse.REMAINDER, metavar="COMMAND", help="the test command after --"
    )
    add_compare_parsers(commands)
    add_queue_parsers(commands)
    add_quarantine_parsers(commands)
    return parser


def _upload(args: argparse.Namespace) -> int:
    env = os.environ
    url = args.url or env.get("LAPTIME_URL")
    token = args.token or env.get("LAPTIME_TOKEN")
    try:
        if not url or not token:
            raise UploadError("no server: set LAPTIME_URL and LAPTIME_TOKEN (or --url/--token)")
        base = metadata_from_env(env)
        history = checkout_history(env)
        metadata: UploadMetadata = replace(
            base,
            commit=args.commit or base.commit,
            branch=args.branch or base.branch,
            pipeline=args.pipeline or base.pipeline,
            job=args.job or base.job,
            machine=args.machine or base.machine,
            labels={**base.labels, **parse_labels(args.label)},
            started_at=args.started_at,
            wall_s=args.wall_s,
            peak_rss_mib=args.peak_rss_mib,
            job_wall_s=args.job_wall_s if args.job_wall_s is not None else base.job_wall_s,
            idempotency_key=args.idempotency_key,
            backfill=args.backfill,
            plan_id=args.plan_id,
            first_parents=history.first_parents,
            merged_requests=history.merged_requests,
        )
        files = []
        for raw in args.files:
            try:
                files.append((Path(raw).name, Path(raw).read_bytes()))
            except OSError as exc:
                raise UploadError(f"{raw}: cannot read: {exc.strerror or exc}") from exc
        send_and_report(
            files,
            url=url,
            token=token,
            metadata=metadata,
            echo=_echo,
            retries=args.retries,
            max_total_s=args.max_time_s,
            wait=args.wait,
            poll_s=args.poll_interval,
            project=args.project or env.get("LAPTIME_PROJECT"),
        )
    except (UploadError, ValueError) as exc:
        _echo(f"{PREFIX}: upload failed: {exc}", True)
        # Ingest failing is the answer `--wait` asked for; anything else is the server's
        # problem, not the build's, unless the job says otherwise.
        return 1 if args.fail_on_error or isinstance(exc, IngestFailed) else 0
    return 0


def _retry(args: argparse.Namespace) -> int:
    url = args.url or os.environ.get("LAPTIME_URL")
    token = args.token or os.environ.get("LAPTIME_TOKEN")
    if not url or not token:
        _echo(f"{PREFIX}: set LAPTIME_URL and LAPTIME_TOKEN (or --url/--token)", True)
        return 1
    try:
        answer = retry_upload(url, args.upload_id, token=token)
    except UploadError as exc:
        _echo(f"{PREFIX}: {exc}", True)
        return 1
    _echo(f"upload {answer.get('id')}: {answer.get('status')} {answer.get('url')}", False)
    return 0


def _shard(args: argparse.Namespace) -> int:
    try:
        index, total = parse_shard_spec(f"{args.index}/{args.total}")
    except ShardSpecError as exc:
        _echo(f"{PREFIX}: {exc}", True)
        return 2
    try:
        text = sys.stdin.read() if args.collected == "-" else Path(args.collected).read_text()
    except OSError as exc:
        _echo(f"{PREFIX}: {args.collected}: cannot read: {exc}", True)
        return 2
    server = ServerConfig.from_env(os.environ)
    server = replace(
        server,
        url=args.url or server.url,
        project=args.project or server.project,
        timeout_s=args.timeout_s if args.timeout_s is not None else server.timeout_s,
    )
    plan = plan_shard(
        read_collected(text),
        index=index,
        total=total,
        server=server,
        cache_path=Path(args.cache) if args.cache else None,
        fallback=shard_fallback(os.environ),
    )
    for nodeid in plan.nodeids:
        _echo(nodeid, False)
    if plan.warning:
        _echo(f"{PREFIX}: warning: {plan.warning}", True)
    plan_note = f", plan {plan.plan_id} (upload with --plan-id)" if plan.plan_id else ""
    _echo(
        f"{PREFIX}: shard {index}/{total}: {len(plan.nodeids)} tests ({plan.source}{plan_note})",
        True,
    )
    return 0


def _records(args: argparse.Namespace) -> list[Path]:
    named = [Path(p) for p in args.records] or [Path(DEFAULT_CACHE).parent / RECORD_DIR]
    return record_files(named)


def _shard_verify(args: argparse.Namespace) -> int:
    try:
        records = [load_record(path) for path in _records(args)]
    except ValueError as exc:
        _echo(f"{PREFIX}: shard-verify: {exc}", True)
        return 2
    verdict = verify_records(records)
    for note in verdict.notes:
        _echo(f"{PREFIX}: shard-verify: {note}", False)
    for problem in verdict.problems:
        _echo(f"{PREFIX}: shard-verify: {problem}", True)
    if verdict.problems:
        _echo(f"{PREFIX}: shard-verify: FAILED, {len(verdict.problems)} problems", True)
        return 1
    _echo(
        f"{PREFIX}: shard-verify: {len(records)} shards ran all {verdict.collected} collected "
        "tests",
        False,
    )
    return 0


def _shard_fold(args: argparse.Namespace) -> int:
    try:
        records = [load_record(path) for path in _records(args)]
        seconds = folded_seconds(records)
        if seconds:
            save_durations(Path(args.cache), seconds)
    except (OSError, ValueError) as exc:
        _echo(f"{PREFIX}: shard-fold: {exc}", True)
        return 2
    _echo(f"{PREFIX}: shard-fold: {len(seconds)} tests from {len(records)} records", False)
    return 0


def _run(args: argparse.Namespace) -> int:
    command = list(args.argv)
    if command[:1] == ["--"]:
        command = command[1:]
    return run_wrapped(command, env=os.environ, echo=_echo)


def _compare(args: argparse.Namespace) -> int:
    return run_compare(args, _echo)


def _comment(args: argparse.Namespace) -> int:
    return run_comment(args, _echo)


def _queue(args: argparse.Namespace) -> int:
    return run_queue(args, _echo)


def _quarantine(args: argparse.Namespace) -> int:
    return run_export(args, _echo)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `laptime-ci` console script."""
    args = _parser().parse_args(list(argv) if argv is not None else None)
    handlers = {
        "upload": _upload,
        "retry": _retry,
        "shard": _shard,
        "shard-verify": _shard_verify,
        "shard-fold": _shard_fold,
        "run": _run,
        "compare": _compare,
        "comment": _comment,
        "queue": _queue,
        "quarantine": _quarantine,
    }
    return handlers[args.command](args)


def run() -> None:
    """Console-script wrapper: exit with main's status."""
    sys.exit(main())


__all__: list[str] = ["main", "run"]


if __name__ == "__main__":
    run()
