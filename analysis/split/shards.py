"""CI sharding: which collected tests shard I of N runs, balanced by estimated duration.

Guarantees the pitfalls of duration-based sharding call for: deterministic (same inputs, same
shards on every machine), every collected test in exactly one shard, no empty shard while
there are at least N tests, tests without history placed by their estimate (file median, then
project median) instead of dropped or counted as free. Files stay whole unless one is
heavier than a shard's fair share, so a module's fixture setup, which pytest charges to the
file's first test, is paid once rather than once per shard.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.ci.pytest_selection import Invocation, job_args
from analysis.ci.runner_commands import FILE_ONLY, JobSelection, select_jobs
from analysis.ci.snippets import pytest_commands
from analysis.errors import AnswerError
from analysis.estimate import estimate_new_tests
from analysis.split.items import item_keys
from analysis.split.partition import partition_items


@dataclass(frozen=True)
class Shard:
    """One shard: what to pass to pytest, every nodeid it covers and its predicted time."""

    index: int  # 1-based, like pytest-split's --group (CircleCI's CIRCLE_NODE_INDEX + 1)
    members: tuple[str, ...]  # files kept whole, `file::Class` or nodeids
    nodeids: tuple[str, ...]
    predicted_s: float
    new_tests: tuple[str, ...]  # nodeids without history, placed by estimate
    # What the runner takes for this shard: its arguments and a full command.
    selection: JobSelection | None = None


def plan_id(shards: Sequence[Shard]) -> str:
    """A short, stable id of a whole assignment (every shard's nodeids, in order): the same
    for each shard of one pipeline, so uploads can name the plan they ran."""
    digest = hashlib.sha256()
    for shard in shards:
        digest.update(f"{shard.index}\0".encode())
        for nodeid in shard.nodeids:
            digest.update(nodeid.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:12]


def assign_shards(
    estimates: pd.Series,
    collected: Sequence[str] | None,
    total: int,
    *,
    runner: str = "pytest",
    units: pd.Series | None = None,
    invocation: Invocation | None = None,
) -> list[Shard]:
    """Split the collected tests (or, with None, every test in `estimates`) into `total` shards.

    `runner` words each shard's selection (runner_commands); `units` maps nodeids to their
    selection unit where known (else the nodeid's first part). A runner that selects files
    only keeps every file whole, so no test runs in two shards. With an `invocation`, pytest
    shards get arguments too: their coarsest members, as that invocation names them."""
    if total < 1:
        raise AnswerError(f"total must be at least 1, got {total}")
    if collected is None:
        ids = sorted({str(x) for x in estimates.index})
    else:
        ids = sorted({str(x).strip() for x in collected if str(x).strip()})
    if not ids:
        return [Shard(i + 1, (), (), 0.0, ()) for i in range(total)]
    tests = estimate_new_tests(estimates, ids)
    tests = tests.sort_index()
    if units is not None:
        known = units.reindex(tests.index)
        tests["file"] = known.where(known.notna(), tests["file"])
    fair_s = float(tests["duration_s"].sum()) / total
    if runner in FILE_ONLY:
        keys = item_keys(tests, "file", fair_s)
    else:
        keys = _split_until(item_keys(tests, "auto", fair_s), min(total, len(tests)))
    names = np.asarray(sorted(set(keys)), dtype=object)
    weight_by_key = tests["duration_s"].groupby(keys.to_numpy()).sum()
    weights = weight_by_key.reindex(names).to_numpy(dtype=np.float64)
    part = partition_items(weights, total)
    assignment = _fill_empty(part.assignment.copy(), weights, total)
    bin_of_key = pd.Series(assignment, index=names)
    bin_of_test = keys.map(bin_of_key)
    new = tests["source"] != "history"
    in_bins = [tuple(tests.index[bin_of_test.to_numpy() == b]) for b in range(total)]
    # pytest takes the nodeids themselves; other runners get their own words.
    selections: list[JobSelection | None] = [None] * total
    if runner != "pytest":
        selections = list(select_jobs(runner, tests["file"], in_bins))
    elif invocation is not None:
        selections = list(pytest_commands(job_args(list(tests.index), in_bins, invocation)))
    shards = []
    for b in range(total):
        in_bin = bin_of_test.to_numpy() == b
        nodeids = tuple(tests.index[in_bin])
        shards.append(
            Shard(
                index=b + 1,
                members=tuple(str(n) for n in names[assignment == b]),
                nodeids=nodeids,
                predicted_s=float(tests["duration_s"].to_numpy()[in_bin].sum()),
                new_tests=tuple(tests.index[in_bin & new.to_numpy()]),
                selection=selections[b],
            )
        )
    return shards


def _split_until(keys: pd.Series, wanted: int) -> pd.Series:
    """Break the items with the most tests into single tests until there are `wanted` items."""
    keys = keys.copy()
    nodeids = keys.index.to_series().astype(str)
    while keys.nunique() < wanted:
        sizes = keys.value_counts()
        sizes = sizes[sizes > 1]
        if sizes.empty:
            break
        # Largest item first, then by name, so the choice is deterministic.
        biggest = sorted(sizes.items(), key=lambda kv: (-kv[1], str(kv[0])))[0][0]
        mask = keys == biggest
        keys[mask] = nodeids[mask]
    return keys


def _fill_empty(assignment: np.ndarray, weights: np.ndarray, total: int) -> np.ndarray:
    """Give an empty shard the lightest item of a shard holding several (never expected)."""
    for b in range(total):
        if (assignment == b).any():
            continue
        counts = np.bincount(assignment, minlength=total)
        donors = np.flatnonzero(counts > 1)
        if len(donors) == 0:
            break
        candidates = np.flatnonzero(np.isin(assignment, donors))
        assignment[candidates[np.argmin(weights[candidates])]] = b
    return assignment
