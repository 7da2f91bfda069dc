"""Stored changes as people read them: named, sized, attributed, ranked by time added per run,
per week of machine time, or per week of money."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from analysis.changes.attribution import BisectStep, bisect_steps, requests_of
from analysis.changes.pipelines import PIPELINE_NAMES


@dataclass(frozen=True)
class ChangeItem:
    """One stored change with what it is about and which commits it came with."""

    id: int
    kind: str  # test, function, file, job or pipeline
    name: str  # the nodeid, function key, file path, job name or pipeline series name
    test: str | None
    file: str | None
    job: str
    machine: str
    branch: str
    labels_key: str
    state: str
    state_at: datetime | None
    commit_before: str | None
    commit_after: str | None
    at_before: datetime
    at_after: datetime
    pipeline_after: str | None
    runs_before: int
    runs_after: int
    median_before_s: float
    median_after_s: float
    spread_before_s: float
    spread_after_s: float
    delta_s: float  # seconds added per run (negative: saved)
    relative: float  # the change as a share of the time before
    sigmas: float  # the change in the series' own noise
    z: float
    between: tuple[str, ...] | None  # commits strictly between, oldest first; None: unknown
    between_complete: bool
    bisect: tuple[BisectStep, ...]  # what to run at each commit in (before, after]
    detected_at: datetime
    cell_id: int | None = None  # the series' cell (None: a pipeline's)
    # Machine seconds added per week: delta_s x the cell's (or the pipelines') runs a week.
    per_week_s: float | None = None
    per_week_cost: float | None = None  # dollars a week, where the cell's machine is priced
    # The pull or merge requests that brought the commits in (before, after], where known.
    pull_requests: tuple[str, ...] = ()

    @property
    def slower(self) -> bool:
        """True when the runs after take longer."""
        return self.delta_s > 0


# How a list can be ranked: time added per run, machine time a week, money a week.
CHANGE_SORTS = ("per_run", "per_week", "cost")


def with_weekly(
    items: Sequence[ChangeItem],
    runs_per_week: Mapping[int, float],
    pipelines_per_week: float | None,
    usd_per_min: Mapping[str, float],
) -> list[ChangeItem]:
    """Each change with the machine time and money it adds a week: its delta per run times
    how often its cell (or, for a pipeline's, the default branch's pipelines) ran lately."""
    out = []
    for item in items:
        rate = pipelines_per_week if item.cell_id is None else runs_per_week.get(item.cell_id)
        if rate is None:
            out.append(item)
            continue
        seconds = item.delta_s * rate
        price = usd_per_min.get(item.machine) if item.cell_id is not None else None
        cost = None if price is None else seconds / 60.0 * price
        out.append(replace(item, per_week_s=seconds, per_week_cost=cost))
    return out


def sort_changes(items: Sequence[ChangeItem], by: str = "per_run") -> list[ChangeItem]:
    """The most added first by `by` (CHANGE_SORTS); changes it cannot size come last."""
    if by not in CHANGE_SORTS:
        raise ValueError(f"sort must be one of {', '.join(CHANGE_SORTS)}")

    def key(c: ChangeItem) -> tuple[bool, float, int]:
        value = {"per_run": c.delta_s, "per_week": c.per_week_s, "cost": c.per_week_cost}[by]
        return (value is None, -(value or 0.0), c.id)

    return sorted(items, key=key)


def change_items(frame: pd.DataFrame) -> list[ChangeItem]:
    """Rows of app.db.changes.load_changes as items, the most time added per run first."""
    items = [_item(row) for row in frame.to_dict(orient="records")]
    return sorted(items, key=lambda c: (-c.delta_s, c.id))


def _item(row: dict[Hashable, Any]) -> ChangeItem:
    kind = str(row["kind"])
    name = {
        "test": row.get("nodeid") or row["key"],
        "function": row["key"],
        "file": row["key"],
        "job": row["job"],
        "pipeline": PIPELINE_NAMES.get(str(row["key"]), row["key"]),
    }[kind]
    between = row.get("between_commits")
    commits = tuple(str(c) for c in between) if isinstance(between, list | tuple) else None
    candidates = (*(commits or ()), *((row["commit_after"],) if row.get("commit_after") else ()))
    before, after = float(row["median_before_s"]), float(row["median_after_s"])
    return ChangeItem(
        id=int(row["id"]),
        kind=kind,
        name=str(name),
        test=_text(row.get("nodeid")),
        file=_text(row.get("file")),
        job=str(row["job"]),
        machine=str(row["machine"]),
        branch=str(row["branch"]),
        labels_key=str(row["labels_key"]),
        state=str(row["state"]),
        state_at=_time(row.get("state_at")),
        commit_before=_text(row.get("commit_before")),
        commit_after=_text(row.get("commit_after")),
        at_before=_time(row["at_before"]) or datetime.min,
        at_after=_time(row["at_after"]) or datetime.min,
        pipeline_after=_text(row.get("pipeline_after")),
        runs_before=int(row["runs_before"]),
        runs_after=int(row["runs_after"]),
        median_before_s=before,
        median_after_s=after,
        spread_before_s=float(row["spread_before_s"]),
        spread_after_s=float(row["spread_after_s"]),
        delta_s=after - before,
        relative=after / before - 1.0,
        sigmas=float(np.log(after / before) / float(row["noise"])),
        z=float(row["z"]),
        between=commits,
        between_complete=bool(row.get("between_complete")),
        bisect=bisect_steps(
            kind=kind,
            name=str(name),
            file=_text(row.get("file")),
            runner=_text(row.get("runner")),
            commits=candidates if commits else (),
        ),
        detected_at=_time(row["detected_at"]) or datetime.min,
        cell_id=None if _text(row.get("cell_id")) is None else int(float(str(row["cell_id"]))),
        pull_requests=requests_of(
            row.get("merged_after") if isinstance(row.get("merged_after"), list) else None,
            candidates,
            _text(row.get("request_after")),
        ),
    )


def _text(value: object) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    return str(value)


def _time(value: object) -> datetime | None:
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime()
    return value if isinstance(value, datetime) else None
