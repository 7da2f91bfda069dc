"""Where the test time goes: totals, shares and percentiles per dimension, from the facts frame.

Every number is computed from the additive facts frame (see `model.frames`), so the offline
CLI (facts from raw results) and the server (daily rollup tables) share this code.

Why one module (over 500 lines): dimension keys, grouping, per-test spreads and weighted
percentiles are one computation every rollup goes through, and each part is used only by it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from analysis.errors import AnswerError
from analysis.filters import UNKNOWN_MARKERS, UNMARKED, marker_sets
from model.frames import label_values

LABEL_PREFIX = "label:"
UNKNOWN_FILE = "(unknown)"
NO_LABEL = "(none)"

# Every dimension a rollup can split by: name -> one-line description (docs/rollups.md lists
# each one; a test fails when one is undocumented).
ROLLUP_DIMENSIONS: dict[str, str] = {
    "test": "one row per test nodeid, parametrize variants apart",
    "function": "parametrize ids stripped: `file::Class::function` over all its variants",
    "file": "the test's source file",
    "marker": "each marker; a test with two markers counts in both, `(unmarked)`, `(unknown)`",
    "job": "the CI job name",
    "machine": "the machine type / resource class the job ran on",
    "branch": "the branch the run was for",
    "label:<key>": "the value of one run label (`label:os`, `label:python`, `label:cuda`)",
}

# The parent a dimension's share is taken within when the caller names none.
DEFAULT_WITHIN: dict[str, str] = {"test": "function", "function": "file", "file": "job"}

ROW_COLUMNS: tuple[str, ...] = (
    "key",
    "runs",
    "total_s",
    "share",
    "mean_s",
    "p50_s",
    "p95_s",
    "max_s",
    "failures",
    "flaky",
    "tests",
    "setup_s",
    "call_s",
    "teardown_s",
    "missing",
    "parent",
    "parent_share",
)


@dataclass(frozen=True)
class DataCompleteness:
    """How much data is missing behind a number; partial data is said, not hidden.

    `results` counts test results; `without_duration` those with no duration (counted in
    `runs` but not in seconds). The run-level fields are None when no runs frame was given.
    `hidden_rows` is a lower bound: `partial_runs_unknown` runs hid an unknown number of rows.
    """

    results: int
    without_duration: int
    runs: int | None = None
    partial_runs: int | None = None
    hidden_rows: int | None = None
    partial_runs_unknown: int | None = None

    @property
    def complete(self) -> bool:
        """True when nothing is known to be missing."""
        return self.without_duration == 0 and not self.partial_runs

    def describe(self) -> str:
        """One human sentence about what is missing (or that nothing is)."""
        if self.complete:
            return f"complete: {self.results} results, all with a duration"
        parts: list[str] = []
        if self.without_duration:
            parts.append(f"{self.without_duration} of {self.results} results have no duration")
        if self.partial_runs:
            hidden = f"{self.hidden_rows or 0} rows hidden"
            if self.partial_runs_unknown:
                hidden = f"at least {hidden} ({self.partial_runs_unknown} runs did not say)"
            parts.append(
                f"{self.partial_runs} of {self.runs} runs came from partial reports ({hidden})"
            )
        return "partial data: " + "; ".join(parts)


@dataclass(frozen=True)
class Rollup:
    """Test time split by one dimension: one row per key (ROW_COLUMNS), largest first."""

    by: str
    within: str | None
    rows: pd.DataFrame
    grand_total_s: float
    keys_total: int  # rows before `limit`
    completeness: DataCompleteness

    def to_records(self) -> list[dict[str, Any]]:
        """The rows as JSON-ready dicts: Python scalars, None for unknown (never NaN)."""
        return records_from_frame(self.rows)


def records_from_frame(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows of a frame as dicts of Python scalars with None for NaN/NaT."""
    out: list[dict[str, Any]] = []
    for record in frame.to_dict(orient="records"):
        out.append({str(k): _json_scalar(v) for k, v in record.items()})
    return out


def _json_scalar(value: Any) -> Any:
    if value is None or value is pd.NaT:
        return None
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return value


def check_dimension(name: str) -> None:
    """Raise ValueError naming the valid dimensions when `name` is not one."""
    if name in ROLLUP_DIMENSIONS and name != "label:<key>":
        return
    if name.startswith(LABEL_PREFIX) and len(name) > len(LABEL_PREFIX):
        return
    valid = ", ".join(ROLLUP_DIMENSIONS)
    raise AnswerError(f"unknown dimension {name!r}; choose one of: {valid}")


@dataclass(frozen=True)
class DimensionKeys:
    """Facts rows keyed by a dimension: `rows[i]` (a facts position) has key `labels[codes[i]]`.

    Positions repeat for the `marker` dimension, where a test with two markers has two keys.
    """

    rows: np.ndarray
    codes: np.ndarray
    labels: np.ndarray  # object array of key strings, one per code


def dimension_keys(facts: pd.DataFrame, name: str) -> DimensionKeys:
    """Key every facts row under a dimension, as integer codes (cheap to group on)."""
    return _Keyer(facts).keys(name)


class _Keyer:
    """Dimension keys of one facts frame. Tests are factorized once (by the integer `test_id`
    when the frame has one, else by nodeid); attributes of a test (its file, its function)
    are then keyed once per test rather than once per row."""

    # Other dimensions whose value is fixed by the test (facts columns of the test dictionary).
    _TEST_ATTRIBUTES = frozenset({"file", "classname"})

    def __init__(self, facts: pd.DataFrame) -> None:
        self.facts = facts
        self._tests: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    def tests(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(code per row, nodeid per code, first row of each code) of the facts' tests."""
        if self._tests is None:
            facts = self.facts
            if "test_id" in facts:
                ids = np.asarray(pd.factorize(facts["test_id"])[0], dtype=np.int64)
                first = np.unique(ids, return_index=True)[1]
                names = pd.Series(facts["nodeid"].to_numpy(dtype=object)[first], dtype=object)
                codes, labels = _factorize(names, UNKNOWN_FILE)
                self._tests = codes[ids], labels, first
            else:
                codes, labels = _factorize(facts["nodeid"], UNKNOWN_FILE)
                self._tests = codes, labels, np.unique(codes, return_index=True)[1]
        return self._tests

    def keys(self, name: str) -> DimensionKeys:
        """Every facts row keyed under dimension `name`."""
        check_dimension(name)
        facts = self.facts
        rows = np.arange(len(facts))
        if name == "marker":
            # Marker sets are attributes of a test: hash each test's tuple once, not each row's.
            codes, _labels, first = self.tests()
            set_codes, sets = marker_sets(facts["markers"].iloc[first])
            return _marker_keys(set_codes[codes], sets)
        if name == "test":
            codes, labels, _first = self.tests()
            return DimensionKeys(rows, codes, labels)
        if name == "function":
            codes, uniques, first = self.tests()
            params_of = facts["params"].astype(object).to_numpy()[first]
            stripped = list(map(_strip_params, uniques.tolist(), params_of.tolist()))
            return DimensionKeys(rows, *_recode(codes, stripped))
        if name in self._TEST_ATTRIBUTES:
            codes, _labels, first = self.tests()
            per_test = pd.Series(facts[name].to_numpy(dtype=object)[first], dtype=object)
            test_codes, labels = _factorize(per_test, UNKNOWN_FILE)
            return DimensionKeys(rows, test_codes[codes], labels)
        if name.startswith(LABEL_PREFIX):
            codes, uniques = _factorize(facts["labels_key"], "")
            values = label_values(pd.Series(uniques, dtype=object), name[len(LABEL_PREFIX) :])
            return DimensionKeys(rows, *_recode(codes, list(values.fillna(NO_LABEL))))
        return DimensionKeys(rows, *_factorize(facts[name], UNKNOWN_FILE))


def _factorize(column: pd.Series, missing: str) -> tuple[np.ndarray, np.ndarray]:
    codes, uniques = pd.factorize(column, use_na_sentinel=True)
    codes = np.asarray(codes, dtype=np.int64)
    values = np.asarray(uniques, dtype=object)
    # Keys are strings; only a non-string key (never in facts) pays for the conversion. The
    # check runs in C: a Python loop over a million tests' labels cost ~0.3 s of a cold read.
    if pd.api.types.infer_dtype(values, skipna=False) not in ("string", "empty"):
        values = np.asarray([str(u) for u in values.tolist()], dtype=object)
    labels = values
    if (codes < 0).any():
        codes = np.where(codes < 0, len(labels), codes)
        labels = np.append(labels, np.array([missing], dtype=object))
    return codes, labels


def _recode(codes: np.ndarray, labels: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Merge codes whose labels coincide (variants of one function, label sets of one os)."""
    sub_codes, sub_labels = pd.factorize(np.asarray([str(x) for x in labels], dtype=object))
    return np.asarray(sub_codes, dtype=np.int64)[codes], np.asarray(sub_labels, dtype=object)


def function_keys(nodeids: pd.Series, params: pd.Series) -> np.ndarray:
    """`file::Class::function` for each nodeid: the nodeid without its parametrize id."""
    keys = dimension_keys(pd.DataFrame({"nodeid": nodeids, "params": params}), "function")
    labels: np.ndarray = keys.labels[keys.codes]
    return labels


def _strip_params(nodeid: str, params: object) -> str:
    if isinstance(params, str):
        return nodeid[: -len(params) - 2] if nodeid.endswith(f"[{params}]") else nodeid
    # No params recorded: only a pytest-style "::function[...]" ending is a parametrize id;
    # Ginkgo's "[k8s.io] Pods ... [Conformance]" and "renders [x]" are names, kept whole.
    bracket = nodeid.find("[")
    if bracket > 0 and nodeid.endswith("]"):
        base = nodeid[:bracket]
        if base.rpartition("::")[2].isidentifier():
            return base
    return nodeid


def _marker_keys(set_codes: np.ndarray, sets: list[tuple[str, ...] | None]) -> DimensionKeys:
    """Keys of rows whose marker sets are `sets[set_codes]` (-1: markers unknown)."""
    names = sorted({m for s in sets if s for m in s})
    vocabulary = [*names, UNMARKED, UNKNOWN_MARKERS]
    index = {m: i for i, m in enumerate(vocabulary)}
    per_set = [
        [index[UNKNOWN_MARKERS]]
        if s is None
        else ([index[m] for m in sorted(set(s))] or [index[UNMARKED]])
        for s in sets
    ]
    per_set.append([index[UNKNOWN_MARKERS]])  # set code -1: markers unknown
    counts = np.array([len(x) for x in per_set])
    flat = np.array([c for x in per_set for c in x], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    per_row = counts[set_codes]
    rows = np.repeat(np.arange(len(set_codes)), per_row)
    # Offset of each repeated row inside its marker list: 0, 1, ... per source row.
    offsets = np.arange(len(rows)) - np.repeat(np.cumsum(per_row) - per_row, per_row)
    codes = flat[np.repeat(starts[set_codes], per_row) + offsets]
    return DimensionKeys(rows, codes, np.asarray(vocabulary, dtype=object))


def data_completeness(facts: pd.DataFrame, runs: pd.DataFrame | None = None) -> DataCompleteness:
    """Count results without a duration in facts and, given runs, partial reports behind them."""
    results = int(facts["runs"].sum())
    without = results - int(facts["known"].sum())
    if runs is None:
        return DataCompleteness(results=results, without_duration=without)
    partial = runs["partial"].fillna(False).astype(bool)
    hidden = pd.to_numeric(runs["hidden_rows"], errors="coerce").fillna(0)
    return DataCompleteness(
        results=results,
        without_duration=without,
        runs=len(runs),
        partial_runs=int(partial.sum()),
        hidden_rows=int(hidden.sum()),
        partial_runs_unknown=int((partial & (hidden == 0)).sum()),
    )


def rollup(
    facts: pd.DataFrame,
    by: str,
    *,
    within: str | None = None,
    sort: str = "total_s",
    descending: bool = True,
    limit: int | None = None,
    runs: pd.DataFrame | None = None,
    test_facts: pd.DataFrame | None = None,
) -> Rollup:
    """Split test time by a dimension (ROLLUP_DIMENSIONS), with shares within a parent.

    `mean_s` is seconds per result; `tests`, `p50_s` and `p95_s` are per-test figures: each
    test of a key is one sample, its mean duration under that key (nearest-rank percentiles,
    see per_test_spread). Facts whose rows are not tests (the server's per-file tables) pass
    the per-test facts as `test_facts` for those columns. `share` is of the grand total (marker
    shares can sum past 1, as a test counts under each of its markers). `parent` is the value
    of `within` (default DEFAULT_WITHIN) where the key spends the most time, and
    `parent_share` the key's seconds there over that parent's total seconds. Pass `runs` to
    have completeness count partial reports.
    """
    check_dimension(by)
    parent_dim = within if within is not None else DEFAULT_WITHIN.get(by)
    if parent_dim is not None:
        check_dimension(parent_dim)
        if parent_dim == by:
            raise AnswerError(f"cannot take shares of {by!r} within itself")
    if sort not in ROW_COLUMNS:
        raise AnswerError(f"cannot sort by {sort!r}; choose one of: {', '.join(ROW_COLUMNS)}")
    grand_total = float(facts["total_s"].sum())
    keyer = _Keyer(facts)
    child = keyer.keys(by)
    rows = _group_rows(facts, child, keyer, grand_total)
    if test_facts is not None:
        spread = per_test_spread(test_facts, by)
        for column in ("tests", "p50_s", "p95_s"):
            rows[column] = rows["key"].map(spread[column]).to_numpy()
        rows["tests"] = rows["tests"].fillna(0).astype("int64")
    if parent_dim is not None:
        rows = _attach_parents(facts, rows, child, keyer.keys(parent_dim))
    else:
        rows["parent"] = None
        rows["parent_share"] = np.nan
    keys_total = len(rows)
    rows = _ordered(rows, sort, descending=descending, limit=limit)
    return Rollup(
        by=by,
        within=parent_dim,
        rows=rows.reset_index(drop=True)[list(ROW_COLUMNS)],
        grand_total_s=grand_total,
        keys_total=keys_total,
        completeness=data_completeness(facts, runs),
    )


def _ordered(rows: pd.DataFrame, sort: str, *, descending: bool, limit: int | None) -> pd.DataFrame:
    """Rows by `sort` (ties by key, missing values last), the first `limit` of them.

    Sorting thousands of string keys is a good part of a rollup: with a limit, the rows that
    can make the cut (ties at the cut included) are picked numerically and only they sorted.
    Values are ranked to RANK_DECIMALS: sums of the same floats added in another order differ
    in their last bits, and must not reorder ties (or change which of them make the cut).
    """
    if sort in ("key", "parent"):
        ordered = rows.sort_values(["key"])
        ordered = ordered.sort_values(sort, ascending=not descending, kind="stable")
        return ordered if limit is None else ordered.head(limit)
    values = np.round(rows[sort].to_numpy(dtype=float, na_value=np.nan), RANK_DECIMALS)
    if limit is not None and limit < len(rows):
        signed = -values if descending else values
        known = ~np.isnan(signed)
        if int(known.sum()) > limit:
            cut = np.partition(signed[known], limit - 1)[limit - 1]
            picked = np.flatnonzero(known & (signed <= cut))
            rows, values = rows.iloc[picked], values[picked]
    by_key = np.argsort(rows["key"].to_numpy(dtype=object).astype(str), kind="stable")
    ranked = pd.Series(values[by_key])
    order = ranked.sort_values(ascending=not descending, kind="stable").index.to_numpy()
    ranked_rows: pd.DataFrame = rows.iloc[by_key[order]]
    return ranked_rows if limit is None else ranked_rows.head(limit)


# Decimals a sort value is ranked to (seconds, shares, counts): far above the last bits of a
# float sum of plausible durations, far below any difference a user could see.
RANK_DECIMALS = 9


def _group_rows(
    facts: pd.DataFrame, keys: DimensionKeys, keyer: _Keyer, grand_total: float
) -> pd.DataFrame:
    n_groups = len(keys.labels)
    g = keys.codes

    def take(column: str) -> np.ndarray:
        values = np.asarray(facts[column].to_numpy(dtype=float, na_value=np.nan), dtype=float)
        picked: np.ndarray = values[keys.rows]
        return picked

    def total_of(values: np.ndarray) -> np.ndarray:
        summed: np.ndarray = np.bincount(g, weights=np.nan_to_num(values), minlength=n_groups)
        return summed

    known = take("known")
    total = take("total_s")
    runs = total_of(take("runs"))
    known_n = total_of(known)
    total_s = total_of(total)
    max_s = pd.Series(take("max_s")).groupby(g).max().reindex(range(n_groups)).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_s = np.where(known_n > 0, total_s / np.where(known_n > 0, known_n, 1), np.nan)
        share = total_s / grand_total if grand_total > 0 else np.full(n_groups, np.nan)
    spread = _per_test_figures(keys, keyer.tests()[0][keys.rows], total, known, n_groups)
    out = pd.DataFrame(
        {
            "key": keys.labels,
            "runs": runs.astype("int64"),
            "total_s": total_s,
            "share": share,
            "mean_s": mean_s,
            "max_s": max_s,
            "failures": total_of(take("failures")).astype("int64"),
            "flaky": total_of(take("flaky")).astype("int64"),
            "tests": spread.tests,
            "missing": (runs - known_n).astype("int64"),
        }
    )
    for phase in ("setup_s", "call_s", "teardown_s"):
        values = take(phase)
        reported = np.bincount(g, weights=(~np.isnan(values)).astype(float), minlength=n_groups)
        # A phase nobody reported is unknown, not zero.
        out[phase] = np.where(reported > 0, total_of(values), np.nan)
    out["p50_s"] = spread.p50_s
    out["p95_s"] = spread.p95_s
    # Keys present in no row (a marker vocabulary entry nobody uses) are not rows.
    return out.loc[np.bincount(g, minlength=n_groups) > 0].reset_index(drop=True)


@dataclass(frozen=True)
class KeySpread:
    """Per key: distinct tests, and the nearest-rank p50/p95 of their mean durations."""

    tests: np.ndarray
    p50_s: np.ndarray
    p95_s: np.ndarray


def _per_test_figures(
    keys: DimensionKeys,
    tests: np.ndarray,
    total: np.ndarray,
    known: np.ndarray,
    n_groups: int,
) -> KeySpread:
    """The per-test figures of each key (docs/rollups.md, "Per-test figures").

    `tests[i]`, `total[i]`, `known[i]` belong to the facts row `keys.rows[i]`. Each test of a
    key is one sample: its seconds under the key over its results with a duration there. The
    sums are additive, so any bucketing of the facts (raw results, days, weeks) gives the same
    figures: the offline CLI and the server cannot disagree.
    """
    n_tests = int(tests.max(initial=0)) + 1
    pair, inverse = np.unique(keys.codes.astype(np.int64) * n_tests + tests, return_inverse=True)
    pair_total = np.bincount(inverse, weights=np.nan_to_num(total), minlength=len(pair))
    pair_known = np.bincount(inverse, weights=np.nan_to_num(known), minlength=len(pair))
    with np.errstate(invalid="ignore", divide="ignore"):
        pair_mean = np.where(
            pair_known > 0, pair_total / np.where(pair_known > 0, pair_known, 1), np.nan
        )
    pair_group = pair // n_tests
    p50, p95 = weighted_nearest_ranks(
        pair_group, pair_mean, np.ones(len(pair)), n_groups, (0.5, 0.95)
    )
    counts = np.bincount(pair_group, minlength=n_groups).astype("int64")
    return KeySpread(tests=counts, p50_s=p50, p95_s=p95)


def per_test_spread(facts: pd.DataFrame, by: str) -> pd.DataFrame:
    """Per key of dimension `by`: `tests`, `p50_s`, `p95_s` (per-test figures), indexed by key.

    The server takes totals of file-grain dimensions from its per-file tables, which know no
    tests; it takes these columns from the per-test facts through this function.
    """
    keyer = _Keyer(facts)
    keys = keyer.keys(by)
    n_groups = len(keys.labels)

    def take(column: str) -> np.ndarray:
        values: np.ndarray = facts[column].to_numpy(dtype=float, na_value=np.nan)[keys.rows]
        return values

    spread = _per_test_figures(
        keys, keyer.tests()[0][keys.rows], take("total_s"), take("known"), n_groups
    )
    frame = pd.DataFrame(
        {"tests": spread.tests, "p50_s": spread.p50_s, "p95_s": spread.p95_s},
        index=pd.Index(keys.labels, name="key"),
    )
    return frame.loc[np.bincount(keys.codes, minlength=n_groups) > 0]


def weighted_nearest_ranks(
    group: np.ndarray,
    values: np.ndarray,
    weights: np.ndarray,
    n_groups: int,
    qs: tuple[float, ...],
) -> list[np.ndarray]:
    """Per group and quantile q, the smallest value whose cumulative weight reaches q.

    Rows with zero weight or NaN values are ignored; groups with no weight get NaN. One sort
    serves every quantile.
    """
    use = (weights > 0) & ~np.isnan(values)
    g, v, w = group[use], values[use], weights[use]
    outs = [np.full(n_groups, np.nan) for _ in qs]
    if len(g) == 0:
        return outs
    # Sort by value, then stably by group: two fast sorts instead of one lexsort.
    order = np.argsort(v, kind="stable")
    order = order[np.argsort(g[order], kind="stable")]
    g, v, w = g[order], v[order], w[order]
    group_w = np.bincount(g, weights=w, minlength=n_groups)
    before = np.cumsum(group_w) - group_w
    within = np.cumsum(w) - before[g]
    for out, q in zip(outs, qs, strict=True):
        # Integer weights keep the sums exact; the epsilon absorbs q*W rounding (0.95*20).
        rank = np.maximum(np.ceil(q * group_w[g] - 1e-9), 1.0)
        hits = np.flatnonzero(within >= rank)
        first = hits[np.unique(g[hits], return_index=True)[1]]
        out[g[first]] = v[first]
    return outs


def weighted_nearest_rank(
    group: np.ndarray, values: np.ndarray, weights: np.ndarray, n_groups: int, q: float
) -> np.ndarray:
    """Per group, the smallest value whose cumulative weight reaches q of the group's weight."""
    return weighted_nearest_ranks(group, values, weights, n_groups, (q,))[0]


def _attach_parents(
    facts: pd.DataFrame, rows: pd.DataFrame, child: DimensionKeys, parent: DimensionKeys
) -> pd.DataFrame:
    total = np.nan_to_num(facts["total_s"].to_numpy(dtype=float))
    n_parents = len(parent.labels)
    parent_totals = np.bincount(parent.codes, weights=total[parent.rows], minlength=n_parents)
    if np.array_equal(child.rows, parent.rows):
        keys, parents, positions = child.codes, parent.codes, child.rows
    else:  # markers: a facts row can sit under several keys
        pairs = pd.DataFrame({"pos": child.rows, "key": child.codes}).merge(
            pd.DataFrame({"pos": parent.rows, "parent": parent.codes}), on="pos"
        )
        keys, parents = pairs["key"].to_numpy(), pairs["parent"].to_numpy()
        positions = pairs["pos"].to_numpy()
    pair, inverse = np.unique(
        keys.astype(np.int64) * n_parents + parents.astype(np.int64), return_inverse=True
    )
    pair_total = np.bincount(inverse, weights=total[positions], minlength=len(pair))
    pair_key, pair_parent = pair // n_parents, pair % n_parents
    name_rank = np.empty(n_parents, dtype=np.int64)
    name_rank[np.argsort(parent.labels, kind="stable")] = np.arange(n_parents)
    # The parent where the key spends most time; ties go to the first parent by name.
    order = np.lexsort((name_rank[pair_parent], -pair_total, pair_key))
    ordered_keys = pair_key[order]
    main = order[np.flatnonzero(np.diff(ordered_keys, prepend=-1) != 0)]
    main_parent = pair_parent[main]
    parent_total = parent_totals[main_parent]
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(parent_total > 0, pair_total[main] / parent_total, np.nan)
    by_name = pd.DataFrame(
        {"parent": parent.labels[main_parent], "parent_share": share},
        index=child.labels[pair_key[main]],
    )
    rows["parent"] = rows["key"].map(by_name["parent"])
    rows["parent_share"] = rows["key"].map(by_name["parent_share"]).astype(float)
    return rows
