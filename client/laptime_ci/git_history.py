"""The checkout's recent first-parent history: what lies between two runs' commits.

The server sees only the commits that ran; the client runs inside the checkout, so it sends
`git rev-list --first-parent -n 50 HEAD` with each upload. The repository is the job's
input and may be hostile: git runs without a shell, with a timeout, with its hooks and
filesystem monitor turned off, and only lines that are whole hexadecimal object ids are kept.
Any failure (no git, not a repository, a shallow clone's end) sends what was read, or nothing.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

# Commits sent per upload: enough for a day of merges; the server bounds it the same.
MAX_COMMITS = 50
GIT_TIMEOUT_S = 5.0
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def first_parent_history(
    env: Mapping[str, str], cwd: Path | None = None, limit: int = MAX_COMMITS
) -> tuple[str, ...]:
    """HEAD and its first parents, newest first, at most `limit`; () when unknown or turned
    off (LAPTIME_GIT_HISTORY=0)."""
    if env.get("LAPTIME_GIT_HISTORY", "1").strip().lower() in ("0", "false", "no", "off"):
        return ()
    command = [
        "git", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
        "rev-list", "--first-parent", "-n", str(int(limit)), "HEAD", "--",
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
    for line in done.stdout.decode("ascii", "replace").splitlines()[:limit]:
        if not _OBJECT_ID.fullmatch(line.strip()):
            break
        commits.append(line.strip())
    return tuple(commits)
