"""The concrete change a split plan asks for: marker lines, pytest arguments, CI snippets.

Every job but one runs an explicit list (or a marker); the remaining "default" job, the one
with the most members, runs everything else (`--deselect` the others, or `-m "not ..."`), so a
test file added after the plan still runs somewhere instead of nowhere.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.ci import loop as ci_loop
from analysis.ci.loop import LISTED_MAX_ARGS, MATRIX_LABELS_KEY
from analysis.ci.plan_labels import LABELS_VAR, UNSTORED_NOTE, UNTRACKED_NOTE, plan_labels
from analysis.ci.pytest_selection import exclusion_args


@dataclass(frozen=True)
class MarkerSplit:
    """A marker split: the line to add to each moved file and each job's `-m` expression."""

    lines: dict[str, str]  # file -> "pytestmark = pytest.mark.slow"
    expressions: tuple[str, ...]  # per job, in job order; "" for a lone job (no -m)
    markers: tuple[str, ...]  # marker names to register (pytest --strict-markers)


def default_job(members_per_job: Sequence[Sequence[str]]) -> int:
    """Index of the job that runs "everything else": the one with the most members."""
    sizes = [len(m) for m in members_per_job]
    return sizes.index(max(sizes)) if sizes else 0


def marker_split(members_per_job: Sequence[Sequence[str]], marker: str = "slow") -> MarkerSplit:
    """Mark the files of every job but the default one; one marker per marked job."""
    k = len(members_per_job)
    if k <= 1:
        return MarkerSplit({}, ("",) * k, ())
    home = default_job(members_per_job)
    marked = [i for i in range(k) if i != home]
    names = {i: marker if len(marked) == 1 else f"{marker}{n + 1}" for n, i in enumerate(marked)}
    lines = {
        str(file): f"pytestmark = pytest.mark.{names[i]}"
        for i in marked
        for file in members_per_job[i]
    }
    ordered = [names[i] for i in marked]
    rest = f"not {ordered[0]}" if len(ordered) == 1 else f"not ({' or '.join(ordered)})"
    expressions = tuple(rest if i == home else names[i] for i in range(k))
    return MarkerSplit(dict(sorted(lines.items())), expressions, tuple(ordered))


def job_pytest_args(
    members_per_job: Sequence[Sequence[str]], granularity: str, marker: str = "slow"
) -> list[tuple[str, ...]]:
    """The pytest arguments of each job: `-m EXPR` for a marker split, else paths/nodeids."""
    k = len(members_per_job)
    if k <= 1:
        return [()] * k
    if granularity == "marker":
        split = marker_split(members_per_job, marker)
        return [("-m", expr) for expr in split.expressions]
    home = default_job(members_per_job)
    others = [m for i in range(k) if i != home for m in members_per_job[i]]
    rest = exclusion_args(others)
    return [rest if i == home else tuple(members_per_job[i]) for i in range(k)]


# Past this many pytest arguments in all, a snippet lets each job ask the server for its shard
# (`--laptime-shard`) instead of listing every nodeid in the workflow.
MATRIX_MAX_ARGS = LISTED_MAX_ARGS


def github_matrix_entry(index: int, total: int, plan_id: str | None) -> list[str]:
    """A matrix `include` entry's opening lines: its group and, for a stored plan, the
    labels naming the plan and the job's shard (a JSON string: a valid YAML scalar)."""
    lines = [f"          - group: {index}"]
    if plan_id is not None:
        labels = json.dumps(plan_labels(plan_id, f"{index}/{total}"))
        lines.append(f"            {MATRIX_LABELS_KEY}: {labels}")
    return lines


def github_job_env(plan_id: str | None, labels: str) -> list[str]:
    """The job's `env:` setting LAPTIME_LABELS for every step, the user's upload included;
    nothing without a plan id."""
    return [] if plan_id is None else ["    env:", f"      {LABELS_VAR}: {labels}"]


def unstored_note(plan_id: str | None, *, server: bool = False) -> str:
    """The opening comment of a snippet: empty for a stored plan, else why its runs cannot
    be matched and (`server`: a server hands it out) how to have it stored."""
    if plan_id is not None:
        return ""
    return UNTRACKED_NOTE if server else UNSTORED_NOTE


def github_actions_matrix(
    args_per_job: Sequence[Sequence[str]], *, plan_id: str | None = None
) -> str:
    """pytest's GitHub Actions job: one matrix entry per planned job that runs it and uploads
    (analysis/ci/loop.py)."""
    return ci_loop.github_actions(args_per_job, plan_id=plan_id)


def pytest_split_durations(durations_s: pd.Series) -> dict[str, float]:
    """pytest-split's `.test_durations` content: a JSON object nodeid -> seconds."""
    values = pd.to_numeric(durations_s, errors="coerce").sort_index()
    values = values[np.isfinite(values.to_numpy(dtype=np.float64))]
    return dict(zip(values.index.astype(str).tolist(), values.round(6).tolist(), strict=True))
