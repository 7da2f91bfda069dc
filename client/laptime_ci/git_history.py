"""The checkout's recent first-parent history: what lies between two runs' commits.

The server sees only the commits that ran; the client runs inside the checkout, so it sends
HEAD and its first parents (`git log --first-parent -n 50`) with each upload, and for each of
them the pull or merge request its message names (GitHub's "Merge pull request #412 from" and
squashed "Title (#412)", GitLab's "See merge request group/project!412"), so that a change can
name the requests that brought it. The repository is the job's
input and may be hostile: git runs without a shell, with a timeout, with its hooks and
filesystem monitor turned off, and only lines that are whole hexadecimal object ids are kept.
Any failure (no git, not a repository, a shallow clone's end) sends what was read, or nothing.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

# Commits sent per upload: enough for a day of merges; the server bounds it the same.
MAX_COMMITS = 50
GIT_TIMEOUT_S = 5.0
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


# What a merge or squash commit says of its request, in the subject or (GitLab) the body.
_REQUEST_PATTERNS = (
    re.compile(r"^Merge pull request #([0-9]{1,10}) "),
    re.compile(r"\(#([0-9]{1,10})\)\s*$"),
    re.compile(r"^See merge request \S*!([0-9]{1,10})\s*$", re.MULTILINE),
)
# Bytes of a commit's message read for its request: a merge message names it near the top.
_MESSAGE_BYTES = 4096


def first_parent_log(
    env: Mapping[str, str], cwd: Path | None = None, limit: int = MAX_COMMITS
) -> tuple[tuple[str, str | None], ...]:
    """HEAD and its first parents, newest first, at most `limit`, each with the request its
    message names (None: none); () when unknown or turned off (LAPTIME_GIT_HISTORY=0)."""
    if env.get("LAPTIME_GIT_HISTORY", "1").strip().lower() in ("0", "false", "no", "off"):
        return ()
    # Each commit starts with a marker no message can name in advance: a hostile message
    # holding separators spoils only its own request, never the commits after it.
    marker = f"\x1e{secrets.token_hex(8)}"
    command = [
        "git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
        "log", "--first-parent", "-n", str(int(limit)), f"--format={marker}%H%x1f%s%x1f%b",
        "HEAD", "--",
    ]  # fmt: skip
    quiet_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_TRACE")}
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            env={**quiet_env, "GIT_TERMINAL_PROMPT": "0"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ()
    if done.returncode != 0:
        return ()
    commits = []
    for record in done.stdout.decode("utf-8", "replace").split(marker)[1:][:limit]:
        sha, _, message = record.partition("\x1f")
        if not _OBJECT_ID.fullmatch(sha.strip()):
            break
        subject, _, body = message.partition("\x1f")
        commits.append((sha.strip(), request_named(subject.strip(), body[:_MESSAGE_BYTES])))
    return tuple(commits)


def request_named(subject: str, body: str = "") -> str | None:
    """The pull or merge request number a commit's message names, if any."""
    for pattern, text in zip(_REQUEST_PATTERNS, (subject, subject, body)):
        found = pattern.search(text)
        if found:
            return found.group(1)
    return None


def merged_requests(log: tuple[tuple[str, str | None], ...]) -> tuple[str, ...]:
    """`sha:number` of each commit of a first-parent log whose message names a request."""
    return tuple(f"{sha}:{request}" for sha, request in log if request)


class CheckoutHistory(NamedTuple):
    """What an upload tells of the checkout's history."""

    first_parents: tuple[str, ...]
    merged_requests: tuple[str, ...]


def checkout_history(env: Mapping[str, str], cwd: Path | None = None) -> CheckoutHistory:
    """The upload metadata's `first_parents` and `merged_requests`, from one `git log`."""
    log = first_parent_log(env, cwd)
    return CheckoutHistory(tuple(sha for sha, _ in log), merged_requests(log))
