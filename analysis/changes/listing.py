"""Stored changes as people read them: named, sized, attributed, ranked by time added per run."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd

from analysis.changes.attribution import BisectStep, bisect_steps
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

    @property
    def slower(self) -> bool:
        """True when the runs after take longer."""
        return self.delta_s > 0


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
