"""The project's quarantine from the CI side (standard library only): the list the pytest
plugin applies (quarantine_plugin.py), and `laptime-ci quarantine export`, which writes it in
another runner's own selection syntax (the server's writers, docs/flaky.md)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from laptime_ci.transport import Unreachable, get_json

FETCH_TIMEOUT_S = 20.0
Echo = Callable[[str, bool], None]


class QuarantineError(RuntimeError):
    """The server gave no quarantine answer."""


def _server(env: Mapping[str, str]) -> tuple[str, str, str | None]:
    url, project = env.get("LAPTIME_URL"), env.get("LAPTIME_PROJECT")
    if not url or not project:
        raise QuarantineError("set LAPTIME_URL and LAPTIME_PROJECT")
    return url, project, env.get("LAPTIME_READ_TOKEN") or env.get("LAPTIME_TOKEN")


def fetch_json(url: str, project: str, path: str, token: str | None, **query: str) -> Any:
    """GET a project endpoint's JSON."""
    address = f"{url.rstrip('/')}/api/v1/projects/{quote(project, safe='')}/{path}"
    if query:
        address += f"?{urlencode(query)}"
    try:
        return get_json(address, token=token, timeout_s=FETCH_TIMEOUT_S)
    except Unreachable as exc:
        raise QuarantineError(f"no answer from {url}: {exc}") from exc
    except RuntimeError as exc:
        raise QuarantineError(str(exc)) from exc


def fetch_quarantined(env: Mapping[str, str]) -> frozenset[str]:
    """The nodeids quarantined now."""
    url, project, token = _server(env)
    answer = fetch_json(url, project, "quarantine", token)
    active = answer.get("active") if isinstance(answer, dict) else None
    if not isinstance(active, list):
        raise QuarantineError("the answer has no list of quarantined tests")
    return frozenset(str(n) for n in active)


# --- laptime-ci quarantine export -------------------------------------------------------

RUNNERS = ("jest", "go", "maven", "gradle", "rspec", "phpunit", "dotnet", "nextest")


def add_parsers(commands: Any) -> None:
    """The `quarantine export` subcommand."""
    group = commands.add_parser("quarantine", help="the project's quarantine in CI")
    sub = group.add_subparsers(dest="quarantine_command", required=True)
    export = sub.add_parser(
        "export", help="write the quarantine in a runner's own selection syntax"
    )
    export.add_argument("--runner", required=True, help=f"one of {', '.join(RUNNERS)}, ...")
    export.add_argument(
        "--part",
        choices=("gating", "quarantine"),
        help="print one part's command only: the gating run (every known test but the "
        "quarantined) or the quarantine run (only them; do not let it fail the job); an "
        "empty line when there is nothing to run",
    )
    export.add_argument("--json", action="store_true", help="print the server's JSON answer")
    export.add_argument("--output", metavar="FILE", help="write to FILE instead of stdout")
    export.add_argument("--url", help="server URL (default: LAPTIME_URL)")
    export.add_argument("--project", help="project slug (default: LAPTIME_PROJECT)")
    export.add_argument("--token", help="default: LAPTIME_READ_TOKEN, else LAPTIME_TOKEN")


def _command(selection: Mapping[str, Any]) -> str:
    """A selection's command, or its arguments as shell words when laptime knows no command."""
    return str(selection.get("command") or shlex.join(selection.get("args") or []))


def export_text(answer: Mapping[str, Any], part: str | None) -> str:
    """The export as people and shells read it."""
    if part is not None:
        return _command(answer[part]) + "\n"
    lines = [
        f"# {answer['runner']}: {len(answer['quarantined'])} quarantined test(s)",
        "# gating run: every known test but the quarantined (its failures fail the job)",
        _command(answer["gating"]),
        "# quarantine run: only the quarantined tests (upload its report; do not fail the job)",
        _command(answer["quarantine"]),
    ]
    lines += [f"# still in the gating run (its file holds other tests): {n}" for n in
              answer.get("still_gating", [])]  # fmt: skip
    return "\n".join(lines) + "\n"


def run_export(args: argparse.Namespace, echo: Echo, env: Mapping[str, str] | None = None) -> int:
    """`laptime-ci quarantine export`: 0 written, 2 no answer."""
    env = os.environ if env is None else env
    url = args.url or env.get("LAPTIME_URL")
    project = args.project or env.get("LAPTIME_PROJECT")
    token = args.token or env.get("LAPTIME_READ_TOKEN") or env.get("LAPTIME_TOKEN")
    if not url or not project:
        echo("laptime-ci: quarantine export needs --url and --project (or LAPTIME_URL and "
             "LAPTIME_PROJECT)", True)  # fmt: skip
        return 2
    try:
        answer = fetch_json(url, project, "quarantine/export", token, runner=args.runner)
    except QuarantineError as exc:
        echo(f"laptime-ci: no quarantine export: {exc}", True)
        return 2
    text = json.dumps(answer, indent=2) + "\n" if args.json else export_text(answer, args.part)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        echo(text.rstrip("\n"), False)
    return 0
