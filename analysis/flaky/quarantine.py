"""Which quarantine entries hold, from the clock and the results alone.

An entry holds from its creation until it is removed, expires, or is released: the test
passed cleanly (no retry) in `release_after_runs` runs in a row. A failure of the test in a
run that started while the entry held is a quarantined failure: the job did not fail for it,
yet it stays in the test's history like any other result.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import pandas as pd

from analysis.flaky.detect import FAILING

State = Literal["active", "expired", "released", "removed"]


@dataclass(frozen=True)
class QuarantineEntry:
    """One quarantine entry as stored."""

    id: int
    nodeid: str
    reason: str
    created_at: datetime
    expires_at: datetime | None
    release_after_runs: int | None
    removed_at: datetime | None


@dataclass(frozen=True)
class QuarantineState:
    """An entry and what became of it."""

    entry: QuarantineEntry
    state: State
    ended_at: datetime | None  # when it stopped holding (None: it holds)
    stable_runs: int  # clean passes in a row, newest last, while it held
    quarantined_failures: int  # failures in runs started while it held


def _state(entry: QuarantineEntry, rows: pd.DataFrame, now: datetime) -> QuarantineState:
    ends: list[tuple[datetime, State]] = []
    if entry.removed_at is not None:
        ends.append((entry.removed_at, "removed"))
    if entry.expires_at is not None and entry.expires_at <= now:
        ends.append((entry.expires_at, "expired"))
    mine = rows[rows["started_at"] >= pd.Timestamp(entry.created_at)].sort_values("started_at")
    stable = 0
    for started, outcome, flaky in zip(
        mine["started_at"], mine["outcome"], mine["flaky"], strict=True
    ):
        if outcome == "skipped":
            continue
        stable = stable + 1 if outcome == "passed" and not flaky else 0
        if entry.release_after_runs is not None and stable >= entry.release_after_runs:
            ends.append((started.to_pydatetime(), "released"))
            break
    ended_at: datetime | None = None
    state: State = "active"
    if ends:
        ended_at, state = min(ends, key=lambda e: e[0])
    held = mine if ended_at is None else mine[mine["started_at"] < pd.Timestamp(ended_at)]
    return QuarantineState(
        entry=entry,
        state=state,
        ended_at=ended_at,
        stable_runs=stable,
        quarantined_failures=int(held["outcome"].isin(FAILING).sum()),
    )


def quarantine_states(
    entries: Sequence[QuarantineEntry], results: pd.DataFrame, now: datetime
) -> list[QuarantineState]:
    """Each entry's state. Results: nodeid, started_at (UTC), outcome, flaky."""
    by_test = dict(tuple(results.groupby("nodeid", sort=False))) if len(results) else {}
    empty = results.iloc[:0]
    return [_state(e, by_test.get(e.nodeid, empty), now) for e in entries]


def active_nodeids(states: Sequence[QuarantineState]) -> frozenset[str]:
    """The tests quarantined now."""
    return frozenset(s.entry.nodeid for s in states if s.state == "active")
