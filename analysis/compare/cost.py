"""What a pipeline's machine time costs against its base: machine-seconds priced per run.

A run's machine seconds are its CI job's wall when the client sent it, else the test
process's wall, else its tests' own seconds (a JUnit file reports no wall; its tests still
held the machine that long). A run priced by no catalogue entry leaves its side unknown:
a cost is never made up from a partial sum.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from analysis.compare.runs import Measure, spread


@dataclass(frozen=True)
class CostComparison:
    """Machine time and its price here against the base's median and spread."""

    machine_time: Measure
    cost: Measure | None  # None when some run's machine is priced by no catalogue entry
    unit: str | None
    unpriced_machines: tuple[str, ...]


def machine_seconds(runs: pd.DataFrame) -> pd.Series:
    """Per run: job wall, else wall, else test seconds (NaN when none is known)."""
    seconds = pd.Series(float("nan"), index=runs.index, dtype="float64")
    for column in ("job_wall_s", "wall_s", "test_s"):
        if column in runs:
            seconds = seconds.fillna(pd.to_numeric(runs[column], errors="coerce"))
    return seconds


def _name(machine: object) -> str:
    """A machine name as listed; a run that named none is "(none)"."""
    return machine if isinstance(machine, str) and machine else "(none)"


def _priced(runs: pd.DataFrame, prices: Mapping[str, float]) -> tuple[pd.Series, set[str]]:
    """Per run money (NaN when unpriced) and the machine names no price covers."""
    rate = runs["machine"].map(lambda m: prices.get(m) if isinstance(m, str) else None)
    rate = pd.to_numeric(rate, errors="coerce")
    unpriced = {_name(m) for m in runs.loc[rate.isna(), "machine"]}
    return machine_seconds(runs) / 60.0 * rate, unpriced


def compare_cost(
    head_runs: pd.DataFrame,
    base_runs: pd.DataFrame,
    prices: Mapping[str, float] | None,
    unit: str | None,
) -> CostComparison:
    """Head runs add up (one pipeline); a base run's numbers are per run, as in compare_runs."""
    head_s = machine_seconds(head_runs)
    base_s = machine_seconds(base_runs).dropna()
    here_s = float(head_s.sum()) if head_s.notna().all() and len(head_s) else float("nan")
    machine_time = Measure(
        here_s, float(base_s.median()) if len(base_s) else float("nan"), spread(base_s)
    )
    if not prices:
        machines = pd.concat([head_runs["machine"], base_runs["machine"]])
        names = sorted({_name(m) for m in machines})
        return CostComparison(machine_time, None, None, tuple(names))
    head_money, head_unpriced = _priced(head_runs, prices)
    base_money, base_unpriced = _priced(base_runs, prices)
    unpriced = tuple(sorted(head_unpriced | base_unpriced))
    if unpriced or head_money.isna().any() or base_money.isna().all():
        return CostComparison(machine_time, None, unit, unpriced)
    base_money = base_money.dropna()
    cost = Measure(float(head_money.sum()), float(base_money.median()), spread(base_money))
    return CostComparison(machine_time, cost, unit, ())
