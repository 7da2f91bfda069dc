"""What flaky tests cost: every second a flake made CI spend or a developer wait.

Three kinds, each priced as machine time, money and developer wait:
- `rerun`: a flaky result's failed attempts inside its job (its seconds minus the last
  attempt's); the job's wall grew by them over its xdist workers.
- `job_retry`: a later run of the same commit and cell after a run whose every failure was a
  flaky test: the failed run's whole wall (setup included) was thrown away.
- `pipeline_rerun`: a later run of a cell that had passed on that commit, re-run because its
  pipeline failed on flaky tests only: its whole wall is spent again.
A later run is a retry when it is in another pipeline or started after the earlier one ended
(otherwise it is a matrix twin, which says who is flaky but costs nothing extra). The developer
waits again for the longest retried job of each re-run (commit, pipeline). A cost shared by
several flaky tests is split equally among them, so per-test figures add up to the totals.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.flaky.detect import FAILING

KINDS = ("rerun", "job_retry", "pipeline_rerun")
ITEM_COLUMNS = (
    "nodeid", "file", "run_id", "job", "week", "kind", "machine_s", "wait_s", "usd",
)  # fmt: skip


def week_of(started: pd.Series) -> pd.Series:
    """The ISO date of the Monday starting each timestamp's UTC week."""
    day = started.dt.tz_convert("UTC").dt.tz_localize(None).dt.normalize()
    monday = day - pd.to_timedelta(day.dt.day_of_week, unit="D")
    return pd.Series(monday.dt.strftime("%Y-%m-%d"), index=started.index)


def rerun_seconds(rows: pd.DataFrame) -> pd.Series:
    """The failed attempts' seconds of flaky results: all but the last attempt's own seconds
    (or an even share of the total when the report does not say the last attempt's)."""
    duration = pd.to_numeric(rows["duration_s"], errors="coerce").astype(float).fillna(0.0)
    attempts = pd.to_numeric(rows["attempts"], errors="coerce").fillna(1).clip(lower=1)
    last = (
        pd.to_numeric(rows["last_attempt_s"], errors="coerce").astype(float)
        if "last_attempt_s" in rows.columns
        else pd.Series(np.nan, index=rows.index)
    )
    even = duration * (attempts - 1) / attempts
    return (duration - last).where(last.notna(), even).clip(lower=0.0)


@dataclass(frozen=True)
class _Retry:
    run_id: int
    kind: str
    machine: object
    machine_s: float
    wait_s: float
    event: tuple[object, ...]
    blamed: frozenset[str]
    job: object
    started_at: pd.Timestamp


def _runs(observed: pd.DataFrame) -> pd.DataFrame:
    cols = ["commit", "pipeline", "job", "cell_labels", "machine", "started_at", "job_wall"]
    return observed.groupby("run_id", sort=False)[cols].first()


def _retries(observed: pd.DataFrame, flaky: set[str]) -> Iterator[_Retry]:
    runs = _runs(observed)
    failing = observed[observed["outcome"].isin(FAILING)]
    fails = failing.groupby("run_id")["nodeid"].agg(frozenset)
    by_pipeline: dict[tuple[object, object], frozenset[str]] = {}
    info = runs.to_dict("index")
    for run_id, failed in fails.items():
        run = info[run_id]
        if isinstance(run["pipeline"], str):
            key = (run["commit"], run["pipeline"])
            by_pipeline[key] = by_pipeline.get(key, frozenset()) | failed
    keyed = runs[runs["commit"].notna()].reset_index()
    keyed["job_key"] = keyed["job"].astype(object).where(keyed["job"].notna(), "")
    for _, cell in keyed.groupby(["commit", "job_key", "cell_labels"], sort=False):
        ordered = cell.sort_values(["started_at", "run_id"]).to_dict("records")
        for prev, cur in itertools.pairwise(ordered):
            wall = float(prev["job_wall"])
            other_pipeline = not (
                isinstance(prev["pipeline"], str) and prev["pipeline"] == cur["pipeline"]
            )
            after = wall == wall and cur["started_at"] >= prev["started_at"] + pd.Timedelta(
                seconds=wall
            )
            if not (other_pipeline or after):
                continue  # a matrix twin, not a retry
            failed = fails.get(prev["run_id"], frozenset())
            if failed:
                kind, blamed, spent, machine = "job_retry", failed, wall, prev["machine"]
            else:
                blamed = by_pipeline.get((prev["commit"], prev["pipeline"]), frozenset())
                kind, spent, machine = "pipeline_rerun", float(cur["job_wall"]), cur["machine"]
            if not blamed or not blamed <= flaky:
                continue  # nothing failed, or a real failure: not a flake's cost
            event = (
                cur["commit"],
                cur["pipeline"] if isinstance(cur["pipeline"], str) else cur["run_id"],
            )
            yield _Retry(
                run_id=int(cur["run_id"]),
                kind=kind,
                machine=machine,
                machine_s=spent if spent == spent else 0.0,
                wait_s=float(cur["job_wall"]) if cur["job_wall"] == cur["job_wall"] else 0.0,
                event=event,
                blamed=blamed,
                job=cur["job"],
                started_at=cur["started_at"],
            )


def _price(machine: object, seconds: float, prices: Mapping[str, float] | None) -> float:
    if prices is None or not isinstance(machine, str) or machine not in prices:
        return float("nan")
    return seconds / 60.0 * prices[machine]


def cost_items(
    observed: pd.DataFrame, flaky: set[str], prices: Mapping[str, float] | None = None
) -> pd.DataFrame:
    """One row per (test, run, kind) a flake cost: ITEM_COLUMNS. `observed` is
    flaky_observations' frame, `flaky` the flaky tests, `prices` dollars/minute by machine."""
    files = observed.drop_duplicates("nodeid").set_index("nodeid")["file"]
    rows: list[dict[str, object]] = []
    reruns = observed[observed["rerun"] & observed["nodeid"].isin(flaky)]
    seconds = rerun_seconds(reruns)
    for (_, row), spent in zip(reruns.iterrows(), seconds, strict=True):
        rows.append(
            {
                "nodeid": row["nodeid"],
                "file": row["file"],
                "run_id": int(row["run_id"]),
                "job": row["job"],
                "started_at": row["started_at"],
                "kind": "rerun",
                "machine_s": float(spent),
                "wait_s": float(spent) / float(row["workers"]),
                "usd": _price(row["machine"], float(spent), prices),
            }
        )
    retries = list(_retries(observed, flaky))
    # The developer waits again once per re-run: for its longest retried job.
    longest: dict[tuple[object, ...], int] = {}
    for i, retry in enumerate(retries):
        best = longest.get(retry.event)
        if best is None or retry.wait_s > retries[best].wait_s:
            longest[retry.event] = i
    for i, retry in enumerate(retries):
        share = 1.0 / len(retry.blamed)
        wait = retry.wait_s if longest[retry.event] == i else 0.0
        usd = _price(retry.machine, retry.machine_s, prices)
        for nodeid in sorted(retry.blamed):
            rows.append(
                {
                    "nodeid": nodeid,
                    "file": files.get(nodeid),
                    "run_id": retry.run_id,
                    "job": retry.job,
                    "started_at": retry.started_at,
                    "kind": retry.kind,
                    "machine_s": retry.machine_s * share,
                    "wait_s": wait * share,
                    "usd": usd * share,
                }
            )
    if not rows:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in ITEM_COLUMNS})
    items = pd.DataFrame(rows)
    items["week"] = week_of(pd.to_datetime(items.pop("started_at"), utc=True))
    return items[list(ITEM_COLUMNS)]


@dataclass(frozen=True)
class CostRow:
    """What flakes cost under one key (a test, file, job, week, or everything)."""

    key: str
    tests: int
    reruns: int
    job_retries: int
    pipeline_reruns: int
    rerun_s: float
    job_retry_s: float
    pipeline_rerun_s: float
    machine_s: float
    wait_s: float
    usd: float | None  # None when no machine involved has a price
    unpriced_s: float  # machine seconds on machines the catalogue does not price


def cost_row(key: str, items: pd.DataFrame) -> CostRow:
    """Add up cost items (cost_items rows) under `key`."""
    kind = items["kind"]
    machine = items["machine_s"].astype(float)
    usd = items["usd"].astype(float)

    def count(name: str) -> int:
        return len(items.loc[kind == name, ["run_id", "kind"]].drop_duplicates())

    def seconds(name: str) -> float:
        return float(machine[kind == name].sum())

    return CostRow(
        key=key,
        tests=int(items["nodeid"].nunique()),
        reruns=int((kind == "rerun").sum()),
        job_retries=count("job_retry"),
        pipeline_reruns=count("pipeline_rerun"),
        rerun_s=seconds("rerun"),
        job_retry_s=seconds("job_retry"),
        pipeline_rerun_s=seconds("pipeline_rerun"),
        machine_s=float(machine.sum()),
        wait_s=float(items["wait_s"].astype(float).sum()),
        usd=float(usd.sum()) if usd.notna().any() else None,
        unpriced_s=float(machine[usd.isna()].sum()),
    )


def cost_by(items: pd.DataFrame, column: str) -> list[CostRow]:
    """Cost rows per value of `column` (nodeid, file, job, week), most machine time first."""
    keys = items[column].astype(object).where(items[column].notna(), "")
    rows = [cost_row(str(key), part) for key, part in items.groupby(keys, sort=False)]
    return sorted(rows, key=lambda r: (-r.machine_s, r.key))
