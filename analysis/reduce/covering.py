"""Covering arrays of strength 1 and 2: which parameter combinations cover every value / pair.

A row is a tuple of level indices, one per argument (argument `j` takes values
`0..levels[j]-1`). A set of rows covers strength `t` when every `t` arguments show every
combination of their values in some row. Three generators, combined by `build_covering`:

- the max-levels construction for strength 1 (row `i` takes value `i`; `max(levels)` rows,
  which is also the lower bound, so it is optimal);
- IPOG (in-parameter-order growth) and AETG-style greedy rows for strength 2;
- an exact branch-and-bound search for tiny grids, which also proves minimality.

Why one module (over 500 lines): the generators share the tuple space (`_TupleSpace`) and
`build_covering`, the one public entry, chooses among them and prunes and cheapens their rows.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations, product

from analysis.errors import AnswerError

Row = tuple[int, ...]
PartialRow = list[int | None]

STRENGTHS = (1, 2)
# Exact search enumerates the whole grid as candidates, so it runs only on small grids.
EXACT_MAX_CANDIDATES = 512
# Greedy and cost swaps may enumerate the whole grid up to this size, else measured rows only.
GRID_MAX_CANDIDATES = 4096
EXACT_NODE_LIMIT = 50_000
# The cost search only refines a covering already in hand, so it gets a smaller budget.
CHEAPEST_NODE_LIMIT = 20_000


@dataclass(frozen=True)
class CoveringArray:
    """Rows (level indices per argument) covering every `strength`-tuple of values."""

    levels: tuple[int, ...]
    strength: int
    rows: tuple[Row, ...]
    # "max-levels" | "ipog" | "aetg" | "greedy" | "greedy-measured" | "exact", plus "+cheapest" when
    # a cost branch-and-bound then found cheaper rows of the same count.
    method: str
    lower_bound: int
    proven_minimal: bool

    @property
    def size(self) -> int:
        """Number of rows."""
        return len(self.rows)


@dataclass(frozen=True)
class ExactSearch:
    """Outcome of an exact search: `rows` is None when no covering of that size exists."""

    rows: tuple[Row, ...] | None
    complete: bool  # False when the node budget ran out before an answer
    nodes: int


class _TupleSpace:
    """Bit positions for every `t`-tuple of values, so a row's coverage is one int mask."""

    def __init__(self, levels: Sequence[int], strength: int) -> None:
        self.levels = tuple(levels)
        self.strength = effective_strength(levels, strength)
        self.groups: list[tuple[int, ...]] = list(combinations(range(len(levels)), self.strength))
        self.offsets: list[int] = []
        self.group_masks: list[int] = []
        offset = 0
        for cols in self.groups:
            size = math.prod(self.levels[c] for c in cols)
            self.offsets.append(offset)
            self.group_masks.append(((1 << size) - 1) << offset)
            offset += size
        self.width = offset
        self.full = (1 << offset) - 1

    def mask(self, row: Sequence[int | None]) -> int:
        """Tuples a (possibly partial) row covers; unset cells cover nothing."""
        bits = 0
        for cols, offset in zip(self.groups, self.offsets, strict=True):
            index = 0
            for c in cols:
                value = row[c]
                if value is None:
                    break
                index = index * self.levels[c] + value
            else:
                bits |= 1 << (offset + index)
        return bits

    def describe(self, bit: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(argument indices, their values) of one tuple bit."""
        g = max(i for i, off in enumerate(self.offsets) if off <= bit)
        cols = self.groups[g]
        index = bit - self.offsets[g]
        values: list[int] = []
        for c in reversed(cols):
            index, v = divmod(index, self.levels[c])
            values.append(v)
        return cols, tuple(reversed(values))


def effective_strength(levels: Sequence[int], strength: int) -> int:
    """The strength actually required: pairs of a single argument are just its values."""
    if strength not in STRENGTHS:
        raise AnswerError(f"strength must be one of {STRENGTHS}, got {strength}")
    if not levels or any(n < 1 for n in levels):
        raise AnswerError(f"every argument needs at least one value, got levels {list(levels)}")
    return min(strength, len(levels))


def lower_bound(levels: Sequence[int], strength: int) -> int:
    """Rows any covering array needs: the product of the `strength` largest level counts."""
    t = effective_strength(levels, strength)
    return math.prod(sorted(levels, reverse=True)[:t])


def uncovered_tuples(
    rows: Iterable[Sequence[int]], levels: Sequence[int], strength: int
) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """Every (argument indices, values) tuple that no row covers."""
    space = _TupleSpace(levels, strength)
    covered = 0
    for row in rows:
        if len(row) != len(levels) or any(not 0 <= v < n for v, n in zip(row, levels, strict=True)):
            raise AnswerError(f"row {tuple(row)} does not fit levels {tuple(levels)}")
        covered |= space.mask(row)
    missing = space.full & ~covered
    out = []
    while missing:
        low = missing & -missing
        out.append(space.describe(low.bit_length() - 1))
        missing ^= low
    return out


def is_covering(rows: Iterable[Sequence[int]], levels: Sequence[int], strength: int) -> bool:
    """True when the rows cover every `strength`-tuple of values."""
    return not uncovered_tuples(rows, levels, strength)


def cover_by_max_levels(levels: Sequence[int]) -> list[PartialRow]:
    """Strength 1: row `i` takes value `i` of every argument that has one, else don't-care."""
    effective_strength(levels, 1)
    return [[i if i < n else None for n in levels] for i in range(max(levels))]


def cover_pairs_ipog(levels: Sequence[int]) -> list[PartialRow]:
    """Strength 2 by IPOG: grow a pair covering one argument at a time (cells may be None)."""
    effective_strength(levels, 2)
    k = len(levels)
    # Largest arguments first: their pairs fix the row count, later ones slot in.
    order = sorted(range(k), key=lambda c: -levels[c])
    lv = [levels[c] for c in order]
    if k == 1:
        grown: list[PartialRow] = [[v] for v in range(lv[0])]
    else:
        grown = [[a, b] for a in range(lv[0]) for b in range(lv[1])]
    for col in range(2, k):
        missing = {(j, vj, v) for j in range(col) for vj in range(lv[j]) for v in range(lv[col])}
        used = [0] * lv[col]
        # Horizontal growth: give each row the value that covers the most missing pairs.
        for row in grown:
            best_v, best_gain = 0, -1
            for v in range(lv[col]):
                gain = sum(
                    1 for j in range(col) if row[j] is not None and (j, row[j], v) in missing
                )
                if gain > best_gain or (gain == best_gain and used[v] < used[best_v]):
                    best_v, best_gain = v, gain
            row.append(best_v)
            used[best_v] += 1
            missing.difference_update((j, row[j], best_v) for j in range(col))
        # Vertical growth: fill don't-cares of matching rows before adding new rows.
        for j, vj, v in sorted(missing):
            for row in grown:
                if row[col] == v and row[j] is None:
                    row[j] = vj
                    break
            else:
                fresh: PartialRow = [None] * (col + 1)
                fresh[j] = vj
                fresh[col] = v
                grown.append(fresh)
    inverse = [0] * k
    for pos, c in enumerate(order):
        inverse[c] = pos
    return [[row[inverse[c]] for c in range(k)] for row in grown]


def cover_pairs_aetg(levels: Sequence[int], *, tries_per_row: int = 20, seed: int = 0) -> list[Row]:
    """Strength 2 by AETG-style greedy rows: each row is the best of `tries_per_row` rows
    grown value by value in a random column order (seeded, so deterministic)."""
    effective_strength(levels, 2)
    k = len(levels)
    if k == 1:
        return [(v,) for v in range(levels[0])]
    rng = random.Random(seed)
    missing = {
        (i, a, j, b)
        for i, j in combinations(range(k), 2)
        for a in range(levels[i])
        for b in range(levels[j])
    }
    rows: list[Row] = []
    while missing:
        best_row: list[int] = []
        best_gain = -1
        # AETG: start from the (argument, value) in the most missing pairs.
        load: dict[tuple[int, int], int] = {}
        for i, a, j, b in missing:
            load[i, a] = load.get((i, a), 0) + 1
            load[j, b] = load.get((j, b), 0) + 1
        start_col, start_v = max(load, key=lambda cv: (load[cv], -cv[0], -cv[1]))
        for _ in range(tries_per_row):
            row: list[int | None] = [None] * k
            row[start_col] = start_v
            gain = 0
            rest = [c for c in range(k) if c != start_col]
            rng.shuffle(rest)
            for c in rest:
                fixed = [(f, v) for f, v in enumerate(row) if v is not None]
                top_v, top_gain = 0, -1
                for v in range(levels[c]):
                    g = sum(
                        1
                        for f, fv in fixed
                        if ((f, fv, c, v) if f < c else (c, v, f, fv)) in missing
                    )
                    if g > top_gain:
                        top_v, top_gain = v, g
                row[c] = top_v
                gain += top_gain
            if gain > best_gain:
                best_row, best_gain = [v for v in row if v is not None], gain
        rows.append(tuple(best_row))
        missing.difference_update(
            (i, best_row[i], j, best_row[j]) for i, j in combinations(range(k), 2)
        )
    return rows


def search_exact(
    levels: Sequence[int],
    strength: int,
    max_rows: int,
    *,
    candidates: Sequence[Row] | None = None,
    node_limit: int | None = EXACT_NODE_LIMIT,
) -> ExactSearch:
    """Find a covering of at most `max_rows` rows from `candidates` (default: the whole grid,
    searched up to value relabelling, which is much faster for proving that none exists).

    Branch and bound: branch on a missing tuple of the most constrained argument group (each
    row covers exactly one tuple per group, so a group missing more tuples than rows left is
    a dead end). Candidates are tried in the given order, so pass the cheapest first.
    """
    space = _TupleSpace(levels, strength)
    whole_grid = candidates is None
    cands = list(product(*map(range, levels))) if whole_grid else list(candidates or [])
    masks, by_bit = _index_candidates(space, cands)
    nodes = 0

    class _Budget(Exception):
        pass

    def dfs(missing: int, rows_left: int, banned: int) -> list[int] | None:
        nonlocal nodes
        nodes += 1
        if node_limit is not None and nodes > node_limit:
            raise _Budget
        if not missing:
            return []
        if rows_left == 0:
            return None
        tightest, tightest_count = 0, 0
        for gmask in space.group_masks:
            count = (missing & gmask).bit_count()
            if count > rows_left:
                return None
            if count > tightest_count:
                tightest, tightest_count = gmask, count
        target = missing & tightest
        bit = (target & -target).bit_length() - 1
        # A candidate tried in an earlier sibling branch is banned in later ones: the same
        # row set would otherwise be explored once per order of its rows.
        for i in by_bit[bit]:
            if banned >> i & 1:
                continue
            found = dfs(missing & ~masks[i], rows_left - 1, banned)
            if found is not None:
                return [i, *found]
            banned |= 1 << i
        return None

    try:
        if whole_grid and max_rows > 0:
            # Relabelling each argument's values maps any covering onto one that holds the
            # all-zero row, so on the whole grid that row can be fixed without loss.
            rest = dfs(space.full & ~masks[0], max_rows - 1, 0)
            picked = None if rest is None else [0, *rest]
        else:
            picked = dfs(space.full, max_rows, 0)
    except _Budget:
        return ExactSearch(rows=None, complete=False, nodes=nodes)
    rows = None if picked is None else tuple(cands[i] for i in picked)
    return ExactSearch(rows=rows, complete=True, nodes=nodes)


def search_cheapest(
    levels: Sequence[int],
    strength: int,
    max_rows: int,
    candidates: Sequence[Row],
    costs: Sequence[float],
    *,
    node_limit: int | None = EXACT_NODE_LIMIT,
) -> ExactSearch:
    """The cheapest covering of at most `max_rows` candidates (sorted cheapest first, with
    their `costs`); `complete` says the budget sufficed to prove it cheapest."""
    space = _TupleSpace(levels, strength)
    masks, by_bit = _index_candidates(space, candidates)
    floor = min(costs, default=0.0)
    best: list[int] | None = None
    best_cost = math.inf
    nodes = 0

    class _Budget(Exception):
        pass

    def dfs(missing: int, rows_left: int, banned: int, cost: float, chosen: list[int]) -> None:
        nonlocal nodes, best, best_cost
        nodes += 1
        if node_limit is not None and nodes > node_limit:
            raise _Budget
        if not missing:
            if cost < best_cost:
                best, best_cost = list(chosen), cost
            return
        tightest, need = 0, 0
        for gmask in space.group_masks:
            count = (missing & gmask).bit_count()
            if count > rows_left:
                return
            if count > need:
                tightest, need = gmask, count
        target = missing & tightest
        bit = (target & -target).bit_length() - 1
        for i in by_bit[bit]:
            # Each of the `need` rows still to come costs at least `floor`; candidates come
            # cheapest first, so once one cannot beat the best, none after it can.
            if cost + costs[i] + (need - 1) * floor >= best_cost:
                break
            if banned >> i & 1:
                continue
            chosen.append(i)
            dfs(missing & ~masks[i], rows_left - 1, banned, cost + costs[i], chosen)
            chosen.pop()
            banned |= 1 << i

    complete = True
    try:
        dfs(space.full, max_rows, 0, 0.0, [])
    except _Budget:
        complete = False
    rows = None if best is None else tuple(candidates[i] for i in best)
    return ExactSearch(rows=rows, complete=complete, nodes=nodes)


def _index_candidates(
    space: _TupleSpace, candidates: Sequence[Row]
) -> tuple[list[int], list[list[int]]]:
    """Each candidate's tuple mask, and for each tuple bit the candidates covering it."""
    masks = [space.mask(r) for r in candidates]
    by_bit: list[list[int]] = [[] for _ in range(space.width)]
    for i, m in enumerate(masks):
        bits = m
        while bits:
            low = bits & -bits
            by_bit[low.bit_length() - 1].append(i)
            bits ^= low
    return masks, by_bit


def build_covering(
    levels: Sequence[int],
    strength: int,
    *,
    costs: Mapping[Row, float] | None = None,
    default_cost: float | None = None,
    exact_max_candidates: int = EXACT_MAX_CANDIDATES,
    node_limit: int = EXACT_NODE_LIMIT,
) -> CoveringArray:
    """The smallest covering found, preferring measured rows (`costs` keys) and cheap ones.

    A row missing from `costs` was never measured and costs `default_cost` (the caller passes
    the median). Among equal sizes the all-measured, then the cheapest, set wins.
    """
    t = effective_strength(levels, strength)
    levels = tuple(levels)
    space = _TupleSpace(levels, t)
    costs = dict(costs or {})
    fallback = 0.0 if default_cost is None else default_cost
    measured = sorted(costs, key=lambda r: (costs[r], r))

    def key(row: Row) -> tuple[float, int]:
        return (costs.get(row, fallback), 0 if row in costs else 1)

    bound = lower_bound(levels, t)
    constructed = cover_by_max_levels(levels) if t == 1 else cover_pairs_ipog(levels)
    first = _prune(space, [_fill(r, measured) for r in constructed])
    if not costs and len(first) == bound:
        # Already optimal and every row costs the same: nothing left to improve.
        return CoveringArray(levels, t, tuple(first), _method(t), bound, proven_minimal=True)

    grid_size = math.prod(levels)
    small = grid_size <= exact_max_candidates
    # Candidates for greedy, swaps and exact search, cheapest (and measured) first.
    enumerable = grid_size <= GRID_MAX_CANDIDATES
    pool = sorted(product(*map(range, levels)), key=key) if enumerable else measured

    solutions: list[tuple[list[Row], str]] = [(first, _method(t))]
    if t == 2:
        solutions.append((cover_pairs_aetg(levels), "aetg"))
    greedy = _greedy(space, measured)
    if greedy is not None:
        solutions.append((greedy, "greedy-measured"))
    if enumerable and len(pool) > len(measured):
        whole = _greedy(space, pool)
        if whole is not None:
            solutions.append((whole, "greedy"))
    proven = False
    best_size = min(len(_prune(space, rows)) for rows, _ in solutions)
    if small:
        size = best_size - 1
        while size >= bound:
            # Cheapest-first over the pool finds cheap rows; if its budget runs out, the
            # relabelling-reduced search still settles whether this size exists at all.
            found = search_exact(levels, t, size, candidates=pool, node_limit=node_limit)
            if not found.complete:
                found = search_exact(levels, t, size, node_limit=node_limit)
            if not found.complete:
                break
            if found.rows is None:
                proven = True
                break
            solutions.append((list(found.rows), "exact"))
            size = len(found.rows) - 1
        else:
            proven = True

    def rank(entry: tuple[list[Row], str]) -> tuple[int, int, float]:
        rows = entry[0]
        return (
            len(rows),
            sum(1 for r in rows if r not in costs),
            sum(key(r)[0] for r in rows),
        )

    improved = [
        (_cheapen(space, _prune(space, rows), pool) if costs else _prune(space, rows), m)
        for rows, m in solutions
    ]
    rows, method = min(improved, key=rank)
    if small and costs:
        # An unmeasured row weighs more than every measured row together: measured first.
        penalty = sum(costs.values()) + 1.0
        weighted = sorted((key(r)[0] + (penalty if r not in costs else 0.0), r) for r in pool)
        cheapest = search_cheapest(
            levels,
            t,
            len(rows),
            [r for _, r in weighted],
            [w for w, _ in weighted],
            node_limit=min(node_limit, CHEAPEST_NODE_LIMIT),
        )
        if cheapest.rows is not None and rank((list(cheapest.rows), "")) < rank((rows, "")):
            rows, method = list(cheapest.rows), method + "+cheapest"
    if len(rows) == bound:
        proven = True
    return CoveringArray(
        levels=levels,
        strength=t,
        rows=tuple(rows),
        method=method,
        lower_bound=bound,
        proven_minimal=proven,
    )


def _method(strength: int) -> str:
    return "max-levels" if strength == 1 else "ipog"


def _fill(row: PartialRow, measured: Sequence[Row]) -> Row:
    """Complete don't-cares, matching the cheapest measured row that agrees on fixed cells."""
    if all(v is not None for v in row):
        return tuple(v for v in row if v is not None)
    for cand in measured:
        if all(v is None or v == c for v, c in zip(row, cand, strict=True)):
            return cand
    return tuple(0 if v is None else v for v in row)


def _greedy(space: _TupleSpace, measured: Sequence[Row]) -> list[Row] | None:
    """Greedy set cover over the given rows (most new tuples, then cheapest, as the rows come
    sorted cheapest first); None if those rows cannot cover everything."""
    if not measured:
        return None
    masks = [space.mask(r) for r in measured]
    if space.full & ~_union(masks):
        return None
    missing = space.full
    rows: list[Row] = []
    while missing:
        # `measured` is sorted cheapest first, so max() keeps the cheapest among equal gains.
        i = max(range(len(masks)), key=lambda i: ((masks[i] & missing).bit_count(), -i))
        rows.append(measured[i])
        missing &= ~masks[i]
    return rows


def _union(masks: Iterable[int]) -> int:
    out = 0
    for m in masks:
        out |= m
    return out


def _prune(space: _TupleSpace, rows: Sequence[Row]) -> list[Row]:
    """Drop duplicate rows and rows whose tuples the others already cover, costliest first."""
    kept = list(dict.fromkeys(rows))
    masks = {r: space.mask(r) for r in kept}
    for row in reversed(list(kept)):
        others = _union(masks[r] for r in kept if r != row)
        if not space.full & ~others:
            kept.remove(row)
    return kept


def _cheapen(
    space: _TupleSpace,
    rows: list[Row],
    pool: Sequence[Row],
) -> list[Row]:
    """Swap rows for cheaper candidates (pool is sorted cheapest first) keeping coverage."""
    rows = list(rows)
    masks = [space.mask(r) for r in rows]
    pool_masks = [space.mask(r) for r in pool]
    rank = {r: i for i, r in enumerate(pool)}
    changed = True
    while changed:
        changed = False
        for i, row in enumerate(rows):
            others = _union(m for j, m in enumerate(masks) if j != i)
            need = space.full & ~others
            limit = rank.get(row, len(pool))
            for p in range(limit):
                cand = pool[p]
                if pool_masks[p] & need == need and cand not in rows:
                    rows[i], masks[i] = cand, pool_masks[p]
                    changed = True
                    break
    return rows
