"""sum_fact_values against a plain per-group reading of the same fact rows."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from model.frames import FACT_VALUE_COLUMNS, sum_fact_values

_MAXED = ("max_s", "peak_rss_mib")
_PHASES = ("setup_s", "call_s", "teardown_s")


def _facts(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)

    def sparse(p_missing: float) -> np.ndarray:
        values = rng.lognormal(-2, 1.5, n)
        values[rng.random(n) < p_missing] = np.nan
        return values

    duration = sparse(0.1)
    return pd.DataFrame(
        {
            "file": rng.choice(np.array(["a.py", "b.py", "c.py", None], dtype=object), n),
            "job": rng.choice(np.array(["lint", "unit"], dtype=object), n),
            "runs": np.ones(n, dtype=np.int64),
            "known": (~np.isnan(duration)).astype(np.int64),
            "total_s": np.nan_to_num(duration),
            "max_s": duration,
            # A file whose rows never report a phase keeps it unknown.
            "setup_s": sparse(0.5),
            "call_s": sparse(0.9),
            "teardown_s": sparse(1.0),
            "failures": (rng.random(n) < 0.2).astype(np.int64),
            "flaky": (rng.random(n) < 0.1).astype(np.int64),
            "peak_rss_mib": sparse(0.7),
        }
    )


def _by_hand(facts: pd.DataFrame, by: list[str]) -> dict[tuple[object, ...], dict[str, float]]:
    groups: dict[tuple[object, ...], list[dict[str, object]]] = {}
    for row in facts.to_dict("records"):
        groups.setdefault(tuple(row[k] for k in by), []).append(row)
    out = {}
    for key, rows in groups.items():
        sums: dict[str, float] = {}
        for column in FACT_VALUE_COLUMNS:
            seen = [float(r[column]) for r in rows if not math.isnan(float(r[column]))]  # type: ignore[arg-type]
            if column in _MAXED:
                sums[column] = max(seen) if seen else math.nan
            elif column in _PHASES:
                sums[column] = math.fsum(seen) if seen else math.nan
            else:
                sums[column] = math.fsum(seen)
        out[key] = sums
    return out


@pytest.mark.parametrize("by", [["file"], ["file", "job"]])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sums_per_group_match_a_plain_reading(by: list[str], seed: int) -> None:
    facts = _facts(400, seed)
    got = sum_fact_values(facts, by)
    want = _by_hand(facts, by)
    assert len(got) == len(want)
    # Groups come in the order of their first row, a missing key kept as a group of its own.
    firsts = list(dict.fromkeys(tuple(r) for r in facts[by].itertuples(index=False)))
    assert [tuple(r) for r in got[by].itertuples(index=False)] == firsts
    for row in got.to_dict("records"):
        expected = want[tuple(row[k] for k in by)]
        for column in FACT_VALUE_COLUMNS:
            if math.isnan(expected[column]):
                assert math.isnan(row[column]), column
            else:
                assert row[column] == pytest.approx(expected[column], rel=1e-12), column
    for column in ("runs", "known", "failures", "flaky"):
        assert got[column].dtype == np.int64, column


def test_no_rows_give_no_groups() -> None:
    got = sum_fact_values(_facts(0, 1), ["file"])
    assert got.empty
    assert {"file", *FACT_VALUE_COLUMNS} <= set(got.columns)
