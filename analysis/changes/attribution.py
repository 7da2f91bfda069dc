"""Which commits a change came with: the range between two runs, and the bisect list.

The server sees only the commits that ran. The client of the first run after a step sends its
first-parent history (newest first, at most a few dozen); the commits strictly between the
last run before and that run are the ones to try, in order, to find the one.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from analysis.ci.runner_commands import select_jobs

# The default branch when none is set and none of these exists: the branch with most cells.
USUAL_DEFAULT_BRANCHES = ("main", "master", "trunk", "develop")


@dataclass(frozen=True)
class Between:
    """Commits strictly between two runs' commits, oldest first; `complete` when the history
    reached the earlier commit (else the list is the part the client sent)."""

    commits: tuple[str, ...]
    complete: bool


def commits_between(
    first_parents: Sequence[str] | None, commit_before: str | None, commit_after: str | None
) -> Between | None:
    """The commits in (before, after) from the after run's first-parent history, or None
    when there is no history or it does not start at the after commit."""
    if not first_parents or not commit_after or not commit_before:
        return None
    history = [c for c in first_parents if c]
    if not history or not _same(history[0], commit_after):
        return None
    for i, sha in enumerate(history):
        if _same(sha, commit_before):
            return Between(tuple(reversed(history[1:i])), complete=True)
    return Between(tuple(reversed(history[1:])), complete=False)


def requests_of(
    merged: Sequence[str] | None, commits: Sequence[str], own: str | None = None
) -> tuple[str, ...]:
    """The pull or merge requests that brought `commits` (oldest first), each once: from the
    after run's `sha:number` entries (laptime_ci.git_history), then the after run's own
    request (a merge train's or merge queue's run carries the request it tests)."""
    named: dict[str, str] = {}
    for entry in merged or ():
        sha, _, number = str(entry).partition(":")
        if sha and number:
            named[sha.lower()] = number
    found: list[str] = []
    for commit in commits:
        request = next((n for sha, n in named.items() if _same(sha, commit)), None)
        if request is not None and request not in found:
            found.append(request)
    if own and own not in found:
        found.append(own)
    return tuple(found)


def _same(a: str, b: str) -> bool:
    """Commit ids equal, one possibly abbreviated."""
    a, b = a.lower(), b.lower()
    return a.startswith(b) or b.startswith(a) if min(len(a), len(b)) >= 7 else a == b


def pick_default_branch(
    override: str | None, branch_cells: Sequence[tuple[str, int]]
) -> str | None:
    """The project's default branch: the override, else main/master/trunk/develop where one
    has runs, else the branch with the most cells; None for a project with no branch."""
    if override:
        return override
    names = {name for name, _ in branch_cells if name}
    for usual in USUAL_DEFAULT_BRANCHES:
        if usual in names:
            return usual
    ranked = sorted(((n, name) for name, n in branch_cells if name), key=lambda t: (-t[0], t[1]))
    return ranked[0][1] if ranked else None


@dataclass(frozen=True)
class BisectStep:
    """Check out `commit` and run `command` (shell words quoted); compare with the step."""

    commit: str
    command: str


def bisect_steps(
    *, kind: str, name: str, file: str | None, runner: str | None, commits: Sequence[str]
) -> tuple[BisectStep, ...]:
    """What to run at each commit in the range, in the runner's own words: the test or the
    file that changed (the whole job for a job wall, the pipeline for its wall or machine
    time), oldest commit first."""
    command = _runner_command(kind, name, file, runner or "pytest")
    return tuple(
        BisectStep(sha, f"git checkout {shlex.quote(sha)} && {command}") for sha in commits
    )


def _runner_command(kind: str, name: str, file: str | None, runner: str) -> str:
    if kind == "job":
        return f"run the job {shlex.quote(name)}"
    if kind == "pipeline":
        return "run the pipeline"
    target = name if kind == "test" else (file or name)
    if runner == "pytest":
        return shlex.join(["pytest", target])
    unit = file or target
    selection = select_jobs(runner, pd.Series({target: unit}), [[target]])[0]
    return selection.command or shlex.join([runner, *selection.args])
