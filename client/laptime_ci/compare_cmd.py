"""`laptime-ci compare` and `laptime-ci comment`: tell the job log, the step summary and the
pull request what this pipeline changed against the base branch."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from laptime_ci.compare_md import markdown, summary_text
from laptime_ci.pr_comment import CommentError, upsert_comment
from laptime_ci.transport import Unreachable, get_json
from laptime_ci.upload import metadata_from_env

Echo = Callable[[str, bool], None]


class CompareError(RuntimeError):
    """The server gave no comparison (unreachable, unknown pipeline, no base runs)."""


def base_branch(env: Mapping[str, str]) -> str:
    """The PR's target branch as the CI tells it, else main."""
    for name in ("LAPTIME_BASE", "GITHUB_BASE_REF", "CI_MERGE_REQUEST_TARGET_BRANCH_NAME"):
        if env.get(name):
            return env[name]
    return "main"


def fetch_compare(url: str, project: str, pipeline: str, base: str, token: str | None) -> Any:
    """The server's compare answer (the REST JSON)."""
    query = urlencode({"pipeline": pipeline, "base": base})
    address = f"{url.rstrip('/')}/api/v1/projects/{quote(project, safe='')}/compare?{query}"
    try:
        return get_json(address, token=token, timeout_s=60)
    except Unreachable as exc:
        raise CompareError(f"no answer from {url}: {exc}") from exc
    except RuntimeError as exc:
        raise CompareError(str(exc)) from exc


def add_parsers(commands: Any) -> None:
    """The `compare` and `comment` subcommands."""
    cmp = commands.add_parser("compare", help="compare this pipeline with the base branch")
    cmp.add_argument("--url", help="server URL (default: LAPTIME_URL)")
    cmp.add_argument(
        "--token", help="a read token (default: LAPTIME_READ_TOKEN, else LAPTIME_TOKEN)"
    )
    cmp.add_argument("--project", help="project slug (default: LAPTIME_PROJECT)")
    cmp.add_argument("--pipeline", help="CI pipeline id (default: from the CI environment)")
    cmp.add_argument("--base", help="base branch (default: the PR's target branch, else main)")
    cmp.add_argument("--summary-file", help="append markdown here (default: GITHUB_STEP_SUMMARY)")
    cmp.add_argument("--markdown-out", help="write the markdown to this file (fork PRs)")
    cmp.add_argument("--comment", action="store_true", help="keep one sticky PR/MR comment")
    cmp.add_argument("--json", action="store_true", help="print the server's JSON answer")
    cmp.add_argument("--fail-on-error", action="store_true", help="exit 1 when it fails")
    com = commands.add_parser("comment", help="post a markdown file as the sticky PR comment")
    com.add_argument("--file", required=True, help="markdown made by compare --markdown-out")


def _link(url: str, project: str, pipeline: str, base: str) -> str:
    query = urlencode({"pipeline": pipeline, "base": base})
    return f"{url.rstrip('/')}/api/v1/projects/{quote(project, safe='')}/compare?{query}"


def run_compare(args: argparse.Namespace, echo: Echo, env: Mapping[str, str] | None = None) -> int:
    """Fetch the answer, print it, write the summary/markdown file, update the comment."""
    env = env if env is not None else os.environ
    url = args.url or env.get("LAPTIME_URL")
    project = args.project or env.get("LAPTIME_PROJECT")
    token = args.token or env.get("LAPTIME_READ_TOKEN") or env.get("LAPTIME_TOKEN")
    pipeline = args.pipeline or metadata_from_env(env).pipeline
    base = args.base or base_branch(env)
    failed = 1 if args.fail_on_error else 0
    if not url or not project or not pipeline:
        echo("laptime-ci: compare needs LAPTIME_URL, LAPTIME_PROJECT and a pipeline id", True)
        return failed
    try:
        answer = fetch_compare(url, project, pipeline, base, token)
    except CompareError as exc:
        echo(f"laptime-ci: compare: {exc}", True)
        return failed
    if args.json:
        echo(json.dumps(answer, indent=2, sort_keys=True), False)
    else:
        echo(summary_text(answer), False)
    text = markdown(answer, link=_link(url, project, pipeline, base))
    summary = args.summary_file or env.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as handle:
            handle.write(text)
    if args.markdown_out:
        Path(args.markdown_out).write_text(text, encoding="utf-8")
    if args.comment:
        return _comment(text, echo, env, failed)
    return 0


def _comment(text: str, echo: Echo, env: Mapping[str, str], failed: int) -> int:
    try:
        how, comment_id = upsert_comment(text, env)
    except (CommentError, OSError, ValueError) as exc:
        echo(f"laptime-ci: comment: {exc}", True)
        return failed
    echo(f"laptime-ci: comment {comment_id} {how}", False)
    return 0


def run_comment(args: argparse.Namespace, echo: Echo, env: Mapping[str, str] | None = None) -> int:
    """Post (or update) the sticky comment from a markdown file."""
    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except OSError as exc:
        echo(f"laptime-ci: comment: cannot read {args.file}: {exc}", True)
        return 1
    return _comment(text, echo, env if env is not None else os.environ, 1)
