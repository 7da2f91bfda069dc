"""A queue's work items: the collected tests grouped as the split planner groups them, heaviest
first, so the long items start early and the queue ends on small ones."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.ci.runner_commands import FILE_ONLY
from analysis.errors import AnswerError
from analysis.estimate import estimate_new_tests
from analysis.split.items import ItemCatalog
from analysis.split.options import Granularity

# A queue's tail is at least its last item: items heavier than this share of one node's fair
# share are cut finer (where the split planner's cost rule says the cut pays). At 1/2,
# numpy.lib.tests made 7 items for 2 nodes and the last ones left a node idle 6.6 s.
TAIL_SHARE = 0.125


@dataclass(frozen=True)
class WorkItem:
    """One unit a node claims: a file, `file::Class`, a function or a test."""

    position: int  # 0 = heaviest: the order nodes take the items in
    name: str
    nodeids: tuple[str, ...]
    predicted_s: float  # its tests plus the first-use/collection cost it carries
    estimated: tuple[str, ...]  # its nodeids without history, placed by an estimate
    unit: str  # the selection unit (file) the item belongs to


def queue_work_items(
    durations: pd.Series,
    collected: Sequence[str],
    *,
    nodes: int,
    runner: str = "pytest",
    units: pd.Series | None = None,
    file_cost_s: pd.Series | None = None,
    budget_s: float | None = None,
) -> list[WorkItem]:
    """The collected tests as work items ordered heaviest first (ties by name).

    `durations` maps nodeids to history seconds; tests absent from it get the estimator's
    guess and are listed in `estimated`. A file-only runner keeps files whole; otherwise a
    file heavier than TAIL_SHARE of a node's fair share is cut finer when that pays for the
    cost (`file_cost_s`) each further node touching it pays again. With a node's `budget_s`,
    no item is kept heavier than it where a finer cut could fit."""
    if nodes < 1:
        raise AnswerError(f"nodes must be at least 1, got {nodes}")
    ids = sorted({str(n) for n in collected if str(n).strip()})
    if not ids:
        return []
    tests = estimate_new_tests(durations, ids).sort_index()
    if units is not None:
        known = units.reindex(tests.index)
        tests["file"] = known.where(known.notna(), tests["file"])
    catalog = ItemCatalog(tests, file_cost_s)
    fair_s = catalog.total_s / nodes
    granularity: Granularity = "file" if runner in FILE_ONLY else "auto"
    max_item_s = fair_s * TAIL_SHARE
    forced_s = float("inf")
    if budget_s is not None and budget_s > 0:
        max_item_s, forced_s = min(max_item_s, budget_s), budget_s
    cut = catalog.items(granularity, max(max_item_s, 1e-9), forced_s, jobs=nodes)
    estimated = (tests["source"] != "history").to_numpy()
    nodeids = tests.index.to_numpy(dtype=object)
    files = tests["file"].astype(str).to_numpy(dtype=object)
    members: list[list[int]] = [[] for _ in range(len(cut.names))]
    for row, code in enumerate(cut.codes.tolist()):
        members[code].append(row)
    order = sorted(range(len(cut.names)), key=lambda i: (-float(cut.weights[i]), cut.names[i]))
    items = []
    for position, code in enumerate(order):
        rows = np.asarray(members[code], dtype=np.int64)
        items.append(
            WorkItem(
                position=position,
                name=str(cut.names[code]),
                nodeids=tuple(str(n) for n in nodeids[rows]),
                predicted_s=float(cut.weights[code]),
                estimated=tuple(str(n) for n in nodeids[rows[estimated[rows]]]),
                unit=str(files[rows[0]]),
            )
        )
    return items
