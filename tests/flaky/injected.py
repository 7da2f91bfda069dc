"""A synthetic history with flakes of known rate injected, and a log of what was injected.

Flakes of four kinds: reruns inside the job, failed jobs retried, whole pipelines re-run, and
matrix twins (a cell run twice at once in one pipeline). Real failures too: a test failing in a
run and again in its retry, and lone failures; neither is flaky. The log lets a test recompute
every expected figure from what it made, not from the code under test.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

import numpy as np
import pandas as pd

from demo.synthetic import generate_history

# Injected per-run (per-pipeline for PIPELINE) flake rates.
RERUN = {"rerun_a": 0.2, "rerun_b": 0.05}
RETRY = {"retry_c": 0.1, "retry_d": 0.04}
PIPELINE = {"pipeline_e": 0.1}
TWIN = {"twin_f": 0.5}
REAL = "real_failure"


@dataclass(frozen=True)
class Cost:
    """One injected cost, before it is split among the tests it blames."""

    tests: frozenset[str]
    kind: str
    machine_s: float
    wait_s: float
    machine: str
    run_id: int
    rerun_of: str | None


@dataclass
class Injected:
    """What was injected: every flaky observation and every cost, by hand."""

    results: pd.DataFrame
    runs: pd.DataFrame
    names: dict[str, str]  # role -> nodeid
    flaky_obs: dict[str, int] = field(default_factory=dict)  # nodeid -> observations
    # One per cost before it is split among its tests: (tests, kind, machine seconds, seconds
    # the developer waits (for a retry: its wall, of which only a re-run's longest counts),
    # machine type, run id, the re-run it belongs to (None for a rerun in the job)).
    costs: list[Cost] = field(default_factory=list)


def _copy_run(
    runs: pd.DataFrame, results: pd.DataFrame, run_id: int, new_id: int, **changes: object
) -> tuple[pd.DataFrame, pd.DataFrame]:
    run = runs[runs["run_id"] == run_id].copy()
    run["run_id"] = new_id
    for key, value in changes.items():
        run[key] = pd.Series([value] * len(run), index=run.index, dtype=object)
    rows = results[results["run_id"] == run_id].copy()
    rows["run_id"] = new_id
    rows["flaky"] = False
    rows["attempts"] = 1
    rows["last_attempt_s"] = np.nan
    # A run again takes its own time (and an identical report would be a repeated upload).
    rows["duration_s"] = rows["duration_s"] * (1 + new_id * 1e-6)
    return run, rows


def injected_history(seed: int = 7, days: int = 12, start: date | None = None) -> Injected:
    """Build the history and inject the flakes; see the module docstring."""
    first = start or date(2026, 11, 2)
    history = generate_history(
        days=days, tests=200, jobs=4, seed=seed, pipelines_per_day=2, start=first
    )
    rng = np.random.default_rng(seed)
    results = history.results.copy()
    for column in ("nodeid", "file", "outcome", "classname", "function", "params", "worker"):
        results[column] = results[column].astype(object)
    runs = history.runs.copy()
    # A clean start: the generator's own flakes and random failures are not ours to count.
    results["flaky"] = False
    results["attempts"] = 1
    results["last_attempt_s"] = np.nan
    results.loc[results["outcome"].isin(("failed", "error")), "outcome"] = "passed"
    skipped = results.loc[results["outcome"] == "skipped", "nodeid"]
    runnable = sorted(set(results["nodeid"]) - set(skipped))
    picked = rng.choice(len(runnable), 8, replace=False)
    roles = [*RERUN, *RETRY, *PIPELINE, *TWIN, REAL, "lonely"]
    names = {role: runnable[i] for role, i in zip(roles, picked, strict=True)}
    log = Injected(results, runs, names)

    def row(run_id: int, role: str) -> pd.Series:
        mask: pd.Series = (results["run_id"] == run_id) & (results["nodeid"] == names[role])
        return mask

    def observe(role: str) -> None:
        log.flaky_obs[names[role]] = log.flaky_obs.get(names[role], 0) + 1

    run_ids = runs["run_id"].tolist()
    jobs = sorted(runs["job"].unique())
    pipelines = sorted(runs["pipeline"].unique())
    twin_pipelines = set(pipelines[::3])  # cell jobs[0] of these get a twin
    rerun_pipelines = set(pipelines[1::3])  # candidates for a whole re-run
    next_id = max(run_ids) + 1
    new_runs: list[pd.DataFrame] = []
    new_results: list[pd.DataFrame] = []

    # 1. Reruns inside the job: the failed attempt's seconds are known, or not (half of them).
    for run_id in run_ids:
        for role, rate in RERUN.items():
            if rng.random() < rate:
                at = row(run_id, role)
                duration = float(results.loc[at, "duration_s"].iloc[0])
                known = rng.random() < 0.5
                results.loc[at, ["flaky", "attempts"]] = [True, 2]
                results.loc[at, "last_attempt_s"] = duration * 0.4 if known else np.nan
                observe(role)
                run = runs[runs["run_id"] == run_id].iloc[0]
                spent = duration * 0.6 if known else duration / 2
                log.costs.append(
                    Cost(frozenset({names[role]}), "rerun", spent,
                         spent / run["xdist_workers"], run["machine"], run_id, None)
                )  # fmt: skip
    # 2. Matrix twins: jobs[0] twice at once in one pipeline; the twin fails twin_f half the time.
    for run_id in run_ids:
        run = runs[runs["run_id"] == run_id].iloc[0]
        if run["pipeline"] not in twin_pipelines or run["job"] != jobs[0]:
            continue
        twin, rows = _copy_run(runs, results, run_id, next_id)
        if rng.random() < TWIN["twin_f"]:
            rows.loc[rows["nodeid"] == names["twin_f"], "outcome"] = "failed"
            observe("twin_f")
        new_runs.append(twin)
        new_results.append(rows)
        next_id += 1
    # 3. Jobs retried after a flaky failure, and once after a real one (not a flake's cost).
    real_done = False
    for run_id in run_ids:
        run = runs[runs["run_id"] == run_id].iloc[0]
        if run["pipeline"] in twin_pipelines | rerun_pipelines:
            continue
        failing = [role for role, rate in RETRY.items() if rng.random() < rate]
        real = not real_done and not failing
        if not failing and not real:
            continue
        for role in failing:
            results.loc[row(run_id, role), "outcome"] = "failed"
            observe(role)
        if real:
            results.loc[row(run_id, REAL), "outcome"] = "failed"
            real_done = True
        start = run["started_at"] + pd.Timedelta(seconds=float(run["wall_s"]) + 60)
        wall = float(run["wall_s"]) * float(rng.uniform(0.9, 1.1))
        retry, rows = _copy_run(
            runs, results, run_id, next_id, pipeline=f"{run['pipeline']}-2", started_at=start,
            wall_s=wall,
        )  # fmt: skip
        rows.loc[rows["nodeid"].isin([names[r] for r in failing]), "outcome"] = "passed"
        new_runs.append(retry)
        new_results.append(rows)
        if failing:
            log.costs.append(
                Cost(frozenset(names[r] for r in failing), "job_retry", float(run["wall_s"]),
                     wall, run["machine"], next_id, f"{run['pipeline']}-2")
            )  # fmt: skip
        next_id += 1
    # 4. Whole pipelines re-run after pipeline_e failed in one of their jobs.
    for pipeline in sorted(rerun_pipelines):
        if rng.random() >= PIPELINE["pipeline_e"]:
            continue
        members = runs[runs["pipeline"] == pipeline].sort_values("run_id")
        failed_run = int(members["run_id"].iloc[int(rng.integers(len(members)))])
        results.loc[row(failed_run, "pipeline_e"), "outcome"] = "failed"
        observe("pipeline_e")
        end = max(r.started_at + pd.Timedelta(seconds=r.wall_s) for r in members.itertuples())
        for member in members.itertuples():
            wall = float(member.wall_s) * float(rng.uniform(0.9, 1.1))
            rerun, rows = _copy_run(
                runs, results, int(member.run_id), next_id, pipeline=f"{pipeline}-2",
                started_at=end + pd.Timedelta(seconds=30), wall_s=wall,
            )  # fmt: skip
            rows.loc[rows["nodeid"] == names["pipeline_e"], "outcome"] = "passed"
            new_runs.append(rerun)
            new_results.append(rows)
            kind = "job_retry" if member.run_id == failed_run else "pipeline_rerun"
            spent = float(member.wall_s) if kind == "job_retry" else wall
            log.costs.append(
                Cost(frozenset({names["pipeline_e"]}), kind, spent, wall, member.machine,
                     next_id, f"{pipeline}-2")
            )  # fmt: skip
            next_id += 1
    # 5. A lone failure of a stable test, never retried: a real failure, not flaky.
    lonely_run = run_ids[len(run_ids) // 2]
    results.loc[row(lonely_run, "lonely"), "outcome"] = "failed"
    log.results = pd.concat([results, *new_results], ignore_index=True)
    log.runs = pd.concat([runs, *new_runs], ignore_index=True)
    return log


def expected_per_test(
    injected: Injected, prices: Mapping[str, float]
) -> dict[str, dict[str, float]]:
    """Machine seconds, wait and dollars per test, from the injection log alone."""
    longest: dict[str, int] = {}
    for i, cost in enumerate(injected.costs):
        if cost.rerun_of is not None:
            best = longest.get(cost.rerun_of)
            if best is None or cost.wait_s > injected.costs[best].wait_s:
                longest[cost.rerun_of] = i
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for i, cost in enumerate(injected.costs):
        wait = cost.wait_s if cost.rerun_of is None or longest[cost.rerun_of] == i else 0.0
        for nodeid in cost.tests:
            share = 1 / len(cost.tests)
            out[nodeid]["machine_s"] += cost.machine_s * share
            out[nodeid][f"{cost.kind}_s"] += cost.machine_s * share
            out[nodeid]["wait_s"] += wait * share
            if cost.machine in prices:
                out[nodeid]["usd"] += cost.machine_s * share / 60 * prices[cost.machine]
    return out
