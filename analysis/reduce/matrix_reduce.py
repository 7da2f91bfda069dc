"""CI-matrix reduction: which label dimensions (python, os, cuda...) never change a group's
outcomes or durations, so pull requests can run one value and main/nightly all of them.

Comparisons are made per (test, commit, other labels): the same test on the same code with
every other label fixed, across the dimension's values. Where the run has no commit the
pipeline stands in; a run with neither is compared with nothing.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal, cast

import pandas as pd

from analysis.errors import AnswerError
from model.frames import labels_key

GroupBy = Literal["file", "marker"]
Verdict = Literal["keep", "reduce", "insufficient-data"]
GROUP_BYS: tuple[str, ...] = ("file", "marker")
UNMARKED = "(unmarked)"
MAIN_BRANCHES: tuple[str, ...] = ("main", "master")
_VERDICT_ORDER = {"reduce": 0, "keep": 1, "insufficient-data": 2}


@dataclass(frozen=True)
class MatrixEvidence:
    """One test that behaved differently across a dimension's values on the same commit."""

    kind: Literal["outcome", "duration"]
    test: str
    context: str  # the commit (or pipeline) compared on
    fixed_labels: str  # the other labels held fixed, "k=v,..."
    passed_on: tuple[str, ...]  # outcome evidence: values where it always passed
    failed_on: tuple[str, ...]  # ... and where it always failed or errored
    median_s: dict[str, float]  # duration evidence: median per value
    ratio: float  # slowest / fastest median (NaN for outcome evidence)


@dataclass(frozen=True)
class MatrixVerdict:
    """Whether one group needs every value of one label dimension, with the evidence."""

    group_by: GroupBy
    group: str
    dimension: str
    values: tuple[str, ...]
    verdict: Verdict
    compared: int  # (test, commit, other labels) cells seen on two or more values
    outcome_differs: int  # cells where a test passed on one value and failed on another
    duration_differs: int  # cells where medians differ beyond the threshold
    evidence: tuple[MatrixEvidence, ...]  # capped; the counts above are complete
    keep_value: str | None  # reduce: the value pull requests keep running
    dropped_s: float  # reduce: test time of the other values on non-main branches
    window_days: int | None  # calendar days the compared runs span (None: no start times)
    threshold: float

    @property
    def dropped_s_per_day(self) -> float | None:
        """Machine time saved per day of the window."""
        if self.window_days is None or self.verdict != "reduce":
            return None
        return self.dropped_s / self.window_days

    @property
    def recommendation(self) -> str:
        """One sentence saying what to do."""
        if self.verdict == "reduce":
            per_day = self.dropped_s_per_day
            rate = f", {per_day:.0f} s/day" if per_day is not None else ""
            return (
                f"run {self.group} on {self.dimension}={self.keep_value} only for pull "
                f"requests and on every {self.dimension} on main or nightly: saves "
                f"{self.dropped_s:.0f} s of machine time in the window{rate}"
            )
        if self.verdict == "keep":
            reasons = []
            if self.outcome_differs:
                reasons.append(
                    f"{self.outcome_differs} test/commit cell(s) passed on one "
                    f"{self.dimension} and failed on another"
                )
            if self.duration_differs:
                reasons.append(
                    f"{self.duration_differs} cell(s) ran more than {self.threshold:g}x "
                    "slower on one value"
                )
            return f"keep every {self.dimension} for {self.group}: " + "; ".join(reasons)
        return (
            f"cannot tell for {self.group}: no test ran on two {self.dimension} values for "
            "the same commit with the other labels equal"
        )


def reduce_matrix(
    results: pd.DataFrame,
    runs: pd.DataFrame,
    *,
    group_by: GroupBy = "file",
    threshold: float = 1.5,
    min_delta_s: float = 0.1,
    main_branches: tuple[str, ...] = MAIN_BRANCHES,
    max_evidence: int = 10,
) -> list[MatrixVerdict]:
    """A verdict per (group, label dimension) with two or more values in the window.

    Durations differ when the slowest value's median is more than `threshold` times the
    fastest's and at least `min_delta_s` longer (millisecond tests jitter by 2x).
    """
    if group_by not in GROUP_BYS:
        raise AnswerError(f"group_by must be one of {GROUP_BYS}, got {group_by!r}")
    if threshold < 1:
        raise AnswerError(f"threshold must be >= 1, got {threshold}")
    if results.empty or runs.empty:
        return []
    run_info = _run_info(runs)
    dimensions = sorted({k for labels in run_info["labels"] for k in labels})
    frame = _result_rows(results, group_by).merge(
        run_info.drop(columns=["labels"]), on="run_id", how="inner"
    )
    verdicts: list[MatrixVerdict] = []
    for dim in dimensions:
        per_run = pd.DataFrame(
            {
                "run_id": run_info["run_id"],
                "value": run_info["labels"].map(lambda lb, d=dim: lb.get(d)),
                "fixed": run_info["labels"].map(
                    lambda lb, d=dim: labels_key({k: v for k, v in lb.items() if k != d})
                ),
            }
        )
        rows = frame.merge(per_run[per_run["value"].notna()], on="run_id")
        if rows.empty:
            continue
        verdicts += _dimension_verdicts(
            rows,
            dim,
            group_by=group_by,
            threshold=threshold,
            min_delta_s=min_delta_s,
            main_branches=main_branches,
            max_evidence=max_evidence,
        )
    verdicts.sort(key=lambda v: (_VERDICT_ORDER[v.verdict], -v.dropped_s, v.group, v.dimension))
    return verdicts


def _run_info(runs: pd.DataFrame) -> pd.DataFrame:
    """run_id, comparison context, branch, start day and labels of every run."""
    commit = runs["commit"].astype(object).where(runs["commit"].notna(), None)
    pipeline = runs["pipeline"].astype(object).where(runs["pipeline"].notna(), None)
    fallback = "run:" + runs["run_id"].astype(str)
    context = commit.fillna(pipeline.map(lambda p: None if p is None else f"pipeline:{p}"))
    started = pd.to_datetime(runs["started_at"], utc=True, errors="coerce")
    return pd.DataFrame(
        {
            "run_id": runs["run_id"],
            "context": context.fillna(fallback).astype(str),
            "branch": runs["branch"],
            "day": started.dt.tz_convert(None).dt.normalize(),
            "labels": runs["labels"].map(lambda lb: dict(lb) if isinstance(lb, dict) else {}),
        }
    )


def _result_rows(results: pd.DataFrame, group_by: GroupBy) -> pd.DataFrame:
    """The columns comparisons need, with one row per (result, group)."""
    nodeid = results["nodeid"].astype(str)
    file = results["file"].fillna(nodeid.str.split("::", n=1).str[0])
    out = pd.DataFrame(
        {
            "run_id": results["run_id"],
            "test": nodeid,
            "group": file if group_by == "file" else results["markers"],
            "passed": results["outcome"] == "passed",
            "failed": results["outcome"].isin(("failed", "error")),
            "duration_s": results["duration_s"],
        }
    )
    if group_by == "marker":
        # A test with two markers belongs to both groups; None and [] both become NaN.
        out = out.explode("group")
        out["group"] = out["group"].fillna(UNMARKED)
    return out


def _dimension_verdicts(
    rows: pd.DataFrame,
    dim: str,
    *,
    group_by: GroupBy,
    threshold: float,
    min_delta_s: float,
    main_branches: tuple[str, ...],
    max_evidence: int,
) -> list[MatrixVerdict]:
    """Verdicts of every group for one dimension; `rows` carry `value` and `fixed`."""
    cell_keys = ["group", "test", "context", "fixed"]
    per_value = (
        rows.groupby([*cell_keys, "value"], sort=False)
        .agg(
            passed=("passed", "sum"),
            failed=("failed", "sum"),
            n=("passed", "size"),
            median_s=("duration_s", "median"),
        )
        .reset_index()
    )
    # Consistent outcomes only: a value that both passed and failed is flaky, not different.
    per_value["all_pass"] = (per_value["passed"] == per_value["n"]) & (per_value["n"] > 0)
    per_value["all_fail"] = per_value["failed"] == per_value["n"]
    cells = per_value.groupby(cell_keys, sort=False).agg(
        values=("value", "nunique"),
        any_pass=("all_pass", "any"),
        any_fail=("all_fail", "any"),
        max_s=("median_s", "max"),
        min_s=("median_s", "min"),
    )
    cells["compared"] = cells["values"] >= 2
    cells["outcome"] = cells["compared"] & cells["any_pass"] & cells["any_fail"]
    ratio = cells["max_s"] / cells["min_s"]
    cells["ratio"] = ratio.where(cells["min_s"] > 0, math.inf).where(cells["max_s"].notna())
    cells["duration"] = (
        cells["compared"]
        & (cells["ratio"] > threshold)
        & ((cells["max_s"] - cells["min_s"]) >= min_delta_s)
    )
    counts = cells.groupby(level="group", sort=False)[["compared", "outcome", "duration"]].sum()
    counts_of: dict[str, tuple[int, int, int]] = {
        str(g): (int(c), int(o), int(d))
        for g, c, o, d in zip(
            counts.index, counts["compared"], counts["outcome"], counts["duration"], strict=True
        )
    }
    values_per_group = rows.groupby("group", sort=False)["value"].unique()
    out = []
    for key, values in values_per_group.items():
        if len(values) < 2:
            continue
        group = str(key)
        sub = rows[rows["group"] == group]
        compared, outcome_n, duration_n = counts_of[group]
        if compared == 0:
            verdict: Verdict = "insufficient-data"
        elif outcome_n or duration_n:
            verdict = "keep"
        else:
            verdict = "reduce"
        evidence: tuple[MatrixEvidence, ...] = ()
        keep_value, dropped_s = None, 0.0
        if verdict == "keep":
            evidence = _evidence(
                cast(pd.DataFrame, cells.xs(group, level="group")),
                per_value[per_value["group"] == group],
                max_evidence,
            )
        if verdict == "reduce":
            keep_value = _kept_value(sub)
            dropped = sub[(sub["value"] != keep_value) & ~sub["branch"].isin(main_branches)]
            dropped_s = float(dropped["duration_s"].sum())
        days = sub["day"].dropna()
        window_days = int((days.max() - days.min()).days) + 1 if not days.empty else None
        out.append(
            MatrixVerdict(
                group_by=group_by,
                group=group,
                dimension=dim,
                values=tuple(sorted(map(str, values), key=_natural)),
                verdict=verdict,
                compared=compared,
                outcome_differs=outcome_n,
                duration_differs=duration_n,
                evidence=evidence,
                keep_value=keep_value,
                dropped_s=dropped_s,
                window_days=window_days,
                threshold=threshold,
            )
        )
    return out


def _evidence(
    cells: pd.DataFrame, per_value: pd.DataFrame, limit: int
) -> tuple[MatrixEvidence, ...]:
    """Outcome differences first (they are what forces a keep), then the largest slowdowns."""
    found: list[MatrixEvidence] = []
    outcome = cells[cells["outcome"]].head(limit)
    slow = cells[cells["duration"] & ~cells["outcome"]].sort_values("ratio", ascending=False)
    picked = pd.concat([outcome, slow]).head(limit)
    if picked.empty:
        return ()
    detail = per_value.set_index(["test", "context", "fixed"])
    for key, cell in picked.iterrows():  # at most `limit` rows
        test, context, fixed = cast(tuple[str, str, str], key)
        vals = detail.loc[[(test, context, fixed)]]
        is_outcome = bool(cell["outcome"])
        found.append(
            MatrixEvidence(
                kind="outcome" if is_outcome else "duration",
                test=str(test),
                context=str(context),
                fixed_labels=str(fixed),
                passed_on=_sorted(vals.loc[vals["all_pass"], "value"]) if is_outcome else (),
                failed_on=_sorted(vals.loc[vals["all_fail"], "value"]) if is_outcome else (),
                median_s={}
                if is_outcome
                else {
                    str(v): float(m)
                    for v, m in zip(vals["value"], vals["median_s"], strict=True)
                    if not math.isnan(m)
                },
                ratio=math.nan if is_outcome else float(cell["ratio"]),
            )
        )
    return tuple(found)


def _kept_value(rows: pd.DataFrame) -> str:
    """The value with the most results; among ties the highest version-like value."""
    counts = rows["value"].value_counts()
    top = counts[counts == counts.max()].index
    return max(map(str, top), key=_natural)


def _sorted(values: pd.Series) -> tuple[str, ...]:
    return tuple(sorted(map(str, values), key=_natural))


def _natural(value: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key putting "3.9" before "3.10"."""
    return tuple(
        (0, int(part)) if part.isdigit() else (1, part)
        for part in re.split(r"(\d+)", value)
        if part
    )
