"""Parametrize explosions: the test functions whose variants cost the most, and a covering set
of variants (strength 1 or 2) that keeps every value / pair of values while running fewer.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
import pandas as pd

from analysis.errors import AnswerError
from analysis.reduce.covering import Row, build_covering

ValuesSource = Literal["plugin", "inferred-from-ids"]
# The plugin names a value without a stable repr like pytest's automatic ids: "argname0".
_PLACEHOLDER = re.compile(r"^(?P<name>.+?)\d+$")


@dataclass(frozen=True)
class Variant:
    """One parametrize variant as measured: its id, argument values and median duration."""

    params: str
    values: tuple[str, ...] | None  # one per argname; None when values are unknown
    median_s: float  # NaN when no result had a known duration
    results: int


@dataclass(frozen=True)
class Explosion:
    """A parametrized test function and what its variants cost per run of the suite."""

    file: str
    classname: str | None
    function: str
    duration_s: float  # sum over variants of the median per variant
    file_duration_s: float  # same for every test of the file
    window_s: float  # every known duration of the function's variants in the window
    runs: int  # distinct runs the function ran in
    argnames: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]  # distinct values per argname, in first-seen order
    values_source: ValuesSource | None  # None: values unknown (see values_note)
    values_note: str | None
    variants: tuple[Variant, ...]

    @property
    def share_of_file(self) -> float:
        """Fraction of the file's per-run time spent in this function's variants."""
        return self.duration_s / self.file_duration_s if self.file_duration_s > 0 else math.nan

    @property
    def test(self) -> str:
        """`file::Class::function` as pytest would name it without the parametrize id."""
        parts = [self.file, self.classname, self.function]
        return "::".join(p for p in parts if p)


@dataclass(frozen=True)
class CoveringRow:
    """One proposed variant: its values, the measured variant it is (if any), its cost."""

    values: tuple[str, ...]
    params: str | None  # id of the measured variant with these values, None if never run
    duration_s: float  # the measured median, or the estimate when never run
    measured: bool


@dataclass(frozen=True)
class CoveringProposal:
    """A covering set for one explosion, the predicted saving and the code to paste."""

    test: str
    strength: int
    argnames: tuple[str, ...]
    values_source: ValuesSource
    rows: tuple[CoveringRow, ...]
    variants: int
    lower_bound: int
    proven_minimal: bool
    method: str
    current_s: float  # sum of measured medians of every variant
    proposed_s: float  # sum of the proposed rows' durations (estimates included)
    code: str

    @property
    def saved_s(self) -> float:
        """Predicted time saved per run of the suite."""
        return self.current_s - self.proposed_s

    @property
    def saved_fraction(self) -> float:
        """Saved time as a fraction of the current time."""
        return self.saved_s / self.current_s if self.current_s > 0 else math.nan


def find_explosions(results: pd.DataFrame, runs: pd.DataFrame, *, top: int = 10) -> list[Explosion]:
    """The `top` parametrized test functions by per-run cost (sum of per-variant medians)."""
    del runs  # per-run cost needs only run_id, which results carry
    if results.empty:
        return []
    frame = pd.DataFrame(
        {
            "file": _files(results),
            "classname": results["classname"].fillna(""),
            "function": results["function"].fillna(results["nodeid"]),
            "nodeid": results["nodeid"],
            "params": results["params"],
            "duration_s": results["duration_s"],
            "run_id": results.get("run_id", 0),
        }
    )
    per_test = frame.groupby(["file", "nodeid"], sort=False)["duration_s"].median()
    file_s = per_test.groupby(level="file").sum()
    variants = frame[frame["params"].notna()]
    if variants.empty:
        return []
    keys = ["file", "classname", "function"]
    per_variant = variants.groupby([*keys, "params"], sort=False).agg(
        median_s=("duration_s", "median"), results=("duration_s", "size")
    )
    per_function = variants.groupby(keys, sort=False).agg(
        window_s=("duration_s", "sum"),
        runs=("run_id", "nunique"),
        variants=("params", "nunique"),
    )
    per_function["duration_s"] = per_variant["median_s"].groupby(level=keys).sum()
    per_function = per_function[per_function["variants"] >= 2]
    ranked = per_function.sort_values("duration_s", ascending=False, kind="stable").head(top)
    out = []
    for key, row in ranked.iterrows():
        file, classname, function = cast(tuple[str, str, str], key)
        mask = (
            (variants["file"] == file)
            & (variants["classname"] == classname)
            & (variants["function"] == function)
        )
        out.append(
            _explosion(
                results.loc[mask.index[mask]],
                cast(pd.DataFrame, per_variant.xs((file, classname, function), level=keys)),
                file=str(file),
                classname=str(classname) or None,
                function=str(function),
                duration_s=float(row["duration_s"]),
                file_duration_s=float(file_s.get(file, math.nan)),
                window_s=float(row["window_s"]),
                runs=int(row["runs"]),
            )
        )
    return out


def infer_values_from_ids(ids: list[str]) -> tuple[tuple[tuple[str, ...], ...] | None, str]:
    """Split bracket ids on '-' into per-argument values, only when that is unambiguous.

    Unambiguous: every id has the same number of parts and the distinct parts per position
    form the full grid (so no id could be split another way consistently). Returns the value
    tuple per id (or None) and a note saying why.
    """
    split = [tuple(i.split("-")) for i in ids]
    widths = {len(s) for s in split}
    if len(widths) != 1:
        return None, f"ids split into different numbers of '-' parts ({sorted(widths)})"
    if len(set(split)) != len(split):
        return None, "two ids split into the same parts"
    (width,) = widths
    distinct = [len({s[p] for s in split}) for p in range(width)]
    if math.prod(distinct) != len(split):
        grid = "x".join(map(str, distinct))
        return None, f"the '-' parts do not form a full grid ({grid} != {len(split)} variants)"
    return tuple(split), "values inferred from the '-' parts of the ids"


def propose_covering(explosion: Explosion, strength: int) -> CoveringProposal:
    """A covering set of the explosion's variants with the predicted saving and the code.

    Raises ValueError when the explosion's values are unknown (ambiguous ids).
    """
    if explosion.values_source is None:
        raise AnswerError(f"{explosion.test}: parameter values unknown: {explosion.values_note}")
    index = [{v: i for i, v in enumerate(vals)} for vals in explosion.values]
    levels = [len(vals) for vals in explosion.values]
    costs: dict[Row, float] = {}
    params_of: dict[Row, str] = {}
    for var in explosion.variants:
        assert var.values is not None
        row = tuple(index[a][v] for a, v in enumerate(var.values))
        params_of[row] = var.params
        if not math.isnan(var.median_s):
            costs[row] = var.median_s
    estimate = float(np.median(list(costs.values()))) if costs else 0.0
    array = build_covering(levels, strength, costs=costs, default_cost=estimate)
    rows = tuple(
        CoveringRow(
            values=tuple(explosion.values[a][v] for a, v in enumerate(row)),
            params=params_of.get(row),
            duration_s=costs.get(row, estimate),
            measured=row in costs,
        )
        for row in array.rows
    )
    return CoveringProposal(
        test=explosion.test,
        strength=array.strength,
        argnames=explosion.argnames,
        values_source=explosion.values_source,
        rows=rows,
        variants=len(explosion.variants),
        lower_bound=array.lower_bound,
        proven_minimal=array.proven_minimal,
        method=array.method,
        current_s=float(sum(costs.values())),
        proposed_s=float(sum(r.duration_s for r in rows)),
        code=render_parametrize(explosion.argnames, rows, explosion.values_source),
    )


def render_parametrize(
    argnames: tuple[str, ...], rows: tuple[CoveringRow, ...], source: ValuesSource
) -> str:
    """The `@pytest.mark.parametrize(...)` block replacing the function's parametrization."""
    lines: list[str] = []
    if source == "inferred-from-ids":
        lines += [
            "# Values and names were inferred from JUnit test ids: each string below is an id",
            "# part, not the real value. Replace them (and arg0, arg1, ...) before using this.",
        ]
        cells = [[repr(v) for v in r.values] for r in rows]
    else:
        cells = [list(r.values) for r in rows]
        placeholders = sorted(
            {
                v
                for r in rows
                for a, v in zip(argnames, r.values, strict=True)
                if (m := _PLACEHOLDER.match(v)) and m["name"] == a
            }
        )
        if placeholders:
            lines.append(
                "# No stable repr was recorded for "
                + ", ".join(placeholders)
                + ": substitute the real objects."
            )
    lines.append("@pytest.mark.parametrize(")
    lines.append(f'    "{",".join(argnames)}",')
    lines.append("    [")
    for row_cells in cells:
        if len(argnames) == 1:
            lines.append(f"        {row_cells[0]},")
        else:
            lines.append(f"        ({', '.join(row_cells)}),")
    lines.append("    ],")
    lines.append(")")
    return "\n".join(lines)


def _explosion(
    rows: pd.DataFrame,
    medians: pd.DataFrame,
    **fields: Any,
) -> Explosion:
    """Build one Explosion, working out the parameter values from plugin data or the ids."""
    ids = [str(p) for p in medians.index]
    first = rows.drop_duplicates("params").set_index("params")["param_values"]
    recorded = [first.get(i) for i in ids]
    dicts: list[dict[str, Any]] = [d for d in recorded if isinstance(d, dict) and d]
    argnames: tuple[str, ...] = ()
    per_variant: tuple[tuple[str, ...], ...] | None = None
    source: ValuesSource | None = None
    note: str | None = None
    if len(dicts) == len(ids):
        names = tuple(dicts[0])
        if all(set(d) == set(names) for d in dicts):
            argnames = names
            per_variant = tuple(tuple(str(d[a]) for a in names) for d in dicts)
            source, note = "plugin", None
            if len(set(per_variant)) != len(per_variant):
                per_variant, source = None, None
                note = "two variants recorded the same parameter values"
    if source is None and note is None:
        per_variant, note = infer_values_from_ids(ids)
        if per_variant is not None:
            source = "inferred-from-ids"
            argnames = tuple(f"arg{i}" for i in range(len(per_variant[0])))
        else:
            note = f"values unknown: {note}"
    values: tuple[tuple[str, ...], ...] = ()
    if per_variant is not None:
        values = tuple(
            tuple(dict.fromkeys(v[a] for v in per_variant)) for a in range(len(argnames))
        )
    variants = tuple(
        Variant(
            params=i,
            values=per_variant[n] if per_variant is not None else None,
            median_s=float(medians.iloc[n]["median_s"]),
            results=int(medians.iloc[n]["results"]),
        )
        for n, i in enumerate(ids)
    )
    return Explosion(
        argnames=argnames,
        values=values,
        values_source=source,
        values_note=note,
        variants=variants,
        **fields,
    )


def _files(results: pd.DataFrame) -> pd.Series:
    """The file of each result, from the nodeid where the report did not say."""
    from_nodeid = results["nodeid"].astype(str).str.split("::", n=1).str[0]
    return results["file"].fillna(from_nodeid)
