"""`laptime-ci queue run -- <command>`: queue mode for any runner, one process per batch.

Each batch's selection comes from the server in the runner's own words (the syntax laptime
writes for Jest, Go, Maven, Gradle, RSpec, PHPUnit...): it replaces `{selection}` in the
command (or is appended to it); with no command, laptime's own command for the runner runs.
Batches are sized against the runner's process start cost, measured batch after batch.
`laptime-ci queue status` prints what ran where and fails when a test ran nowhere.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from laptime_ci.budget import JobClock
from laptime_ci.queue_client import QueueClient, QueueConfig, QueueRefused, QueueUnavailable
from laptime_ci.queue_node import Batch, QueueNode
from laptime_ci.shards import DEFAULT_CACHE, ShardSpecError, parse_shard_spec, read_collected

PLACEHOLDER = "{selection}"
# A first guess of each runner's process start (seconds), replaced by what the batches measure.
START_COST_S = {"go": 1.0, "jest": 2.0, "vitest": 2.0, "maven": 8.0, "gradle": 8.0,
                "rspec": 1.0, "phpunit": 0.5, "pytest": 1.0}  # fmt: skip
# Batches aim at this many start costs of work, so starting a process costs about 1/10th.
BATCH_STARTS = 10.0
# Fallback commands (server down) for runners that select whole units by listing them.
UNIT_COMMANDS = {"jest": ["npx", "jest", "--ci", "--runTestsByPath"], "go": ["go", "test"],
                 "rspec": ["bundle", "exec", "rspec"], "phpunit": ["vendor/bin/phpunit"],
                 "pytest": [sys.executable, "-m", "pytest"]}  # fmt: skip

Echo = Callable[[str, bool], None]


def add_parsers(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The `queue` command and its subcommands."""
    queue = commands.add_parser("queue", help="queue mode: pull batches from the pipeline's queue")
    sub = queue.add_subparsers(dest="queue_command", required=True)
    run = sub.add_parser("run", help="run batch after batch, one process each: -- COMMAND")
    run.add_argument("--node", required=True, help="this node, I/N (1-based)")
    run.add_argument("--runner", default="pytest", help="the runner's name (go, jest, maven...)")
    run.add_argument(
        "--collected", default="-", help="file of nodeids, one a line (default: stdin)"
    )
    run.add_argument("--budget", type=float, help="the job's wall budget in seconds")
    run.add_argument("--start-cost-s", type=float, help="the runner's process start (measured)")
    run.add_argument("--cache", default=os.environ.get("LAPTIME_SHARD_CACHE", DEFAULT_CACHE))
    run.add_argument("argv", nargs=argparse.REMAINDER, help="-- the command ({selection})")
    status = sub.add_parser("status", help="what ran where; exit 1 when a test ran nowhere")
    status.add_argument("--queue-id", type=int, help="default: the pipeline's queue")
    status.add_argument("--json", action="store_true")


def run_queue(args: argparse.Namespace, echo: Echo) -> int:
    """Dispatch `queue run` / `queue status`."""
    if args.queue_command == "status":
        return _status(args, echo)
    return _run(args, echo)


def _run(args: argparse.Namespace, echo: Echo) -> int:
    try:
        index, total = parse_shard_spec(args.node)
    except ShardSpecError as exc:
        echo(f"laptime-ci: --node: {exc}", True)
        return 2
    argv = list(args.argv)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    text = sys.stdin.read() if args.collected == "-" else Path(args.collected).read_text()
    collected = read_collected(text) if args.runner == "pytest" else _lines(text)
    clock = JobClock.from_env(os.environ, args.budget)
    start_cost = args.start_cost_s or START_COST_S.get(args.runner, 1.0)
    node = QueueNode(
        collected,
        config=QueueConfig.from_env(os.environ, index=index, total=total),
        clock=clock,
        runner=args.runner,
        cache_path=Path(args.cache),
        min_batch_s=start_cost * BATCH_STARTS,
    )
    node.start()
    failed_batches = 0
    batch = node.next_batch()
    while batch is not None:
        if batch.nodeids:
            command = _command(args.runner, argv, batch)
            echo(f"laptime-ci: batch of {len(batch.nodeids)} tests: {shlex.join(command)}", False)
            begun = time.monotonic()
            code = subprocess.run(command, check=False).returncode
            wall = time.monotonic() - begun
            failed_batches += code != 0
            predicted = sum(batch.predicted_s.get(n, 0.0) for n in batch.nodeids)
            # What the process took beyond its tests' prediction: its start, measured.
            clock.pace.add(predicted, max(wall - start_cost, 0.0))
            start_cost = 0.5 * start_cost + 0.5 * max(wall - predicted, 0.0)
            node.min_batch_s = start_cost * BATCH_STARTS
            outcome = "passed" if code == 0 else "failed"
            node.finished(batch, _apportion(batch, wall, outcome))
        batch = node.next_batch()
    summary = node.close()
    echo(
        f"laptime-ci: queue node {index}/{total} ({summary.mode}): {len(summary.ran)} tests in "
        f"{summary.batches or 1} batches, {clock.elapsed_s():.1f} s since the job started",
        False,
    )
    for line in summary.notes:
        echo(f"laptime-ci: {line}", line.startswith(("error", "warning")))
    return 1 if failed_batches or summary.failed else 0


def _lines(text: str) -> list[str]:
    return list(dict.fromkeys(line.strip() for line in text.splitlines() if line.strip()))


def _apportion(batch: Batch, wall_s: float, outcome: str) -> list[tuple[str, float, str]]:
    """Per-test seconds of a batch measured as one process: its wall shared by prediction."""
    weights = [batch.predicted_s.get(n, 1.0) or 1.0 for n in batch.nodeids]
    total = sum(weights) or 1.0
    return [(n, wall_s * w / total, outcome) for n, w in zip(batch.nodeids, weights)]


def _selection_args(runner: str, batch: Batch) -> tuple[list[str], str]:
    """The batch's runner arguments and laptime's own command for it. Outside the queue (a
    fallback batch) whole units are listed: a superset, which may run a test twice but never
    leaves one out."""
    selection = batch.selection
    if selection:
        return [str(a) for a in selection.get("args", [])], str(selection.get("command") or "")
    if runner == "pytest":
        return list(batch.nodeids), ""
    units = sorted({n.split("::", 1)[0] for n in batch.nodeids})
    base = UNIT_COMMANDS.get(runner)
    return units, shlex.join([*base, *units]) if base else ""


def _command(runner: str, argv: Sequence[str], batch: Batch) -> list[str]:
    args, own = _selection_args(runner, batch)
    if not argv:
        if runner == "pytest":
            return [sys.executable, "-m", "pytest", *args]
        if not own:
            raise SystemExit(f"laptime-ci: no command for runner {runner!r}: pass -- COMMAND")
        return ["sh", "-c", own]
    if PLACEHOLDER in argv:
        out: list[str] = []
        for word in argv:
            out.extend(args if word == PLACEHOLDER else [word])
        return out
    return [*argv, *args]


def _status(args: argparse.Namespace, echo: Echo) -> int:
    config = QueueConfig.from_env(os.environ, index=1, total=1)
    client = QueueClient(config)
    try:
        if args.queue_id:
            client.queue_id = args.queue_id
            report = client.status()
        else:
            report = client.pipeline_status()
    except (QueueUnavailable, QueueRefused) as exc:
        echo(f"laptime-ci: {exc}", True)
        return 1
    if args.json:
        echo(json.dumps(report, indent=2), False)
    else:
        echo(
            f"queue {report['queue_id']} ({report['pipeline']}): {report['tests']} tests, "
            f"wait {report['wait_s']} s, idle tail {report['idle_tail_s']} s, "
            f"{len(report['ran_twice'])} ran twice, {len(report['never_ran'])} ran nowhere",
            False,
        )
    for nodeid in report["never_ran"]:
        echo(f"ran nowhere: {nodeid}", True)
    return 1 if report["never_ran"] else 0
