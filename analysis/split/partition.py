"""Number partitioning: put weighted items into k bins so the heaviest bin is as light as possible.

This is multiway number partitioning (minimise the makespan). The engine runs longest-first
greedy (exactly pytest-split's `least_duration`); on few items (<= 64) it first asks an exact
bin-completion search whether the lower bound itself is reachable. Otherwise it adds
Karmarkar-Karp largest differencing on small instances, improves the best start with pairwise
moves and swaps between the heaviest bin and the others, then retries bin completion at
capacities 0.25-1% above the bound and runs an exact branch-and-bound on tiny instances.
Every exact search has a node budget (not a clock), so time stays bounded. Local search never
raises the makespan and exact searches only ever accept lighter results, so the result is
never worse than greedy. Everything is deterministic: ties are broken by item position, so
callers sort items by name first.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# Instance sizes up to which the slower start heuristics run (they are not needed past this:
# with many items per bin greedy plus local search is already within a small item of optimal).
KK_MAX_ITEMS = 1000
EXACT_MAX_ITEMS = 14
EXACT_MAX_NODES = 200_000
# Two bins whose pooled items number at most this are re-split exactly (meet in the middle).
PAIR_EXACT_MAX_ITEMS = 24
# Three bins pooling at most this many items are re-split exactly (3^9 = 19683 splits).
TRIPLE_EXACT_MAX_ITEMS = 9
TRIPLE_LIGHT_BINS = 5  # the heaviest bin is tried with pairs of the 5 lightest
_REL_EPS = 1e-12
# Local search stops this close to the lower bound: closer is invisible in a CI wait.
_STOP_REL = 1e-6
# Bin completion (exact "do the items fit in k bins of capacity C?") runs up to this many items,
# for capacities this far above the lower bound, lowest first, each with a node budget.
COMPLETION_MAX_ITEMS = 64
COMPLETION_TARGETS = (1e-9, 0.0025, 0.005, 0.01)
COMPLETION_MAX_NODES = 50_000


@dataclass(frozen=True)
class Partition:
    """Which bin each item went to, and each bin's total weight."""

    assignment: IntArray  # bin index per item, in input order
    loads: FloatArray  # total weight per bin
    method: str  # which start won: "greedy", "kk", "exact" (+ "+ls" when improved)

    @property
    def makespan(self) -> float:
        """The heaviest bin's weight."""
        return float(self.loads.max()) if len(self.loads) else 0.0

    def members(self, bin_index: int) -> IntArray:
        """Item positions in one bin, in input order."""
        return np.flatnonzero(self.assignment == bin_index)


def lower_bound(weights: Sequence[float] | FloatArray, k: int) -> float:
    """max(largest item, total / k): no partition into k bins can beat it."""
    w = np.asarray(weights, dtype=np.float64)
    if len(w) == 0:
        return 0.0
    return float(max(w.max(), w.sum() / k))


def greedy_partition(weights: Sequence[float] | FloatArray, k: int) -> Partition:
    """Longest-first greedy: each item, heaviest first, to the currently lightest bin."""
    w = _as_weights(weights, k)
    assignment = np.zeros(len(w), dtype=np.int64)
    loads = np.zeros(k, dtype=np.float64)
    _greedy_into(w, np.argsort(-w, kind="stable"), assignment, loads, np.zeros(k, np.int64))
    return Partition(assignment, loads, "greedy")


def _greedy_into(
    w: FloatArray, order: IntArray, assignment: IntArray, loads: FloatArray, counts: IntArray
) -> None:
    """Greedy placement of `order` (heaviest first) on top of the current loads, in place."""
    # The item count in the key spreads zero-weight items instead of piling them on bin 0.
    heap = [(float(loads[b]), int(counts[b]), b) for b in range(len(loads))]
    heapq.heapify(heap)
    weights = w[order].tolist()
    placed = []
    for weight in weights:
        load, count, b = heapq.heappop(heap)
        placed.append(b)
        heapq.heappush(heap, (load + weight, count + 1, b))
    assignment[order] = np.asarray(placed, dtype=np.int64)
    for load, count, b in heap:
        loads[b], counts[b] = load, count


def partition_items(
    weights: Sequence[float] | FloatArray, k: int, *, max_rounds: int | None = None
) -> Partition:
    """The best partition the engine finds: never heavier than greedy's, often optimal."""
    w = _as_weights(weights, k)
    n = len(w)
    if k == 1 or n == 0:
        return Partition(np.zeros(n, dtype=np.int64), np.array([w.sum()] + [0.0] * (k - 1)), "one")
    greedy = greedy_partition(w, k)
    bound = lower_bound(w, k)
    if greedy.makespan <= bound * (1 + _STOP_REL):
        return greedy
    small = n <= COMPLETION_MAX_ITEMS
    # On few items, first ask whether the bound itself is reachable: if so that is optimal.
    exact_fit = _completion(w, k, bound, COMPLETION_TARGETS[:1]) if small else None
    if exact_fit is not None:
        return exact_fit
    starts = [greedy]
    if 2 <= n <= KK_MAX_ITEMS and k >= 2:
        starts.append(_karmarkar_karp(w, k))
    rounds = max_rounds if max_rounds is not None else 50 + 8 * k
    best = min((_improve(w, p, rounds) for p in starts), key=lambda p: p.makespan)
    if small and best.makespan > bound * (1 + _STOP_REL):
        targets = [t for t in COMPLETION_TARGETS[1:] if bound * (1 + t) < best.makespan]
        best = _completion(w, k, bound, tuple(targets)) or best
    if n <= EXACT_MAX_ITEMS and k >= 2 and best.makespan > bound * (1 + 1e-9):
        exact = _branch_and_bound(w, k, best.makespan)
        if exact is not None and exact.makespan < best.makespan:
            best = exact
    return best


def _completion(w: FloatArray, k: int, bound: float, slacks: Sequence[float]) -> Partition | None:
    """A packing into bins of capacity bound * (1 + slack) for the first slack that works."""
    for slack in slacks:
        found = _bin_completion(w, k, bound * (1 + slack), COMPLETION_MAX_NODES)
        if found is not None:
            loads = np.bincount(found, weights=w, minlength=k).astype(np.float64)
            return Partition(found, loads, "completion")
    return None


def _as_weights(weights: Sequence[float] | FloatArray, k: int) -> FloatArray:
    if k < 1:
        raise ValueError(f"need at least one bin, got {k}")
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError("weights must be one-dimensional")
    if len(w) and (not np.isfinite(w).all() or (w < 0).any()):
        raise ValueError("weights must be finite and non-negative")
    return w


def _improve(w: FloatArray, start: Partition, rounds: int) -> Partition:
    """Improve the heaviest bin pairwise; when it is stuck, rebalance other pairs and retry."""
    k = len(start.loads)
    if k < 2 or len(w) < 2:
        return start
    assignment = start.assignment.copy()
    loads = np.bincount(assignment, weights=w, minlength=k).astype(np.float64)
    eps = _REL_EPS * max(float(loads.max()), 1.0)
    improved = False
    sweeps_left = 3
    bound = lower_bound(w, k) * (1 + _STOP_REL)
    for _ in range(rounds):
        m = int(np.argmax(loads))
        if loads[m] <= bound:
            break
        # The lightest bins offer the largest gaps; past 16 bins only look at the 8 lightest.
        others = [int(b) for b in np.argsort(loads, kind="stable") if b != m]
        if k > 16:
            others = others[:8]
        best: _PairStep | None = None
        for b in others:
            step = _pair_step(w, assignment, loads, m, b, eps)
            if step is not None and (best is None or step.new_max < best.new_max):
                best = step
        if best is not None:
            _apply(best, assignment, loads, w)
            improved = True
            continue
        if k >= 3 and k <= 16 and _triple_step(w, assignment, loads, m, eps):
            improved = True
            continue
        # Stuck: balancing pairs below the top cannot raise the makespan but opens new moves.
        if sweeps_left == 0 or k > 16:
            break
        sweeps_left -= 1
        changed = False
        for a in range(k):
            for b in range(a + 1, k):
                if m in (a, b):
                    continue
                hi, lo = (a, b) if loads[a] >= loads[b] else (b, a)
                step = _pair_step(w, assignment, loads, hi, lo, eps)
                if step is not None:
                    _apply(step, assignment, loads, w)
                    changed = True
        if not changed:
            break
        improved = True
    if not improved:
        return start
    loads = np.bincount(assignment, weights=w, minlength=k).astype(np.float64)
    return Partition(assignment, loads, start.method + "+ls")


@dataclass(frozen=True)
class _PairStep:
    new_max: float  # the heavier of the two bins after the step
    hi: int
    lo: int
    to_hi: IntArray  # items that end in `hi` (all others of the pair end in `lo`)
    pool: IntArray


def _pair_step(
    w: FloatArray, assignment: IntArray, loads: FloatArray, hi: int, lo: int, eps: float
) -> _PairStep | None:
    """The best re-split of bins hi and lo lowering the heavier one, or None."""
    gap = loads[hi] - loads[lo]
    if gap <= eps:
        return None
    in_hi = np.flatnonzero(assignment == hi)
    in_lo = np.flatnonzero(assignment == lo)
    pool = np.concatenate([in_hi, in_lo])
    limit = loads[hi] - eps
    if len(pool) <= PAIR_EXACT_MAX_ITEMS:
        # Few items: re-split the pair exactly, which covers every move and swap.
        keep = _best_two_way(w[pool])
        kept = float(w[pool][keep].sum())
        new = max(kept, float(w[pool].sum()) - kept)
        return _PairStep(new, hi, lo, pool[keep], pool) if new < limit else None
    order_h = in_hi[np.argsort(w[in_hi], kind="stable")]
    wh = w[order_h]
    best_new, best_out, best_in = limit, -1, -1
    # Move: the item closest to half the gap balances the pair best.
    pos = int(np.searchsorted(wh, gap / 2.0))
    for p in (pos - 1, pos):
        if 0 <= p < len(wh) and 0 < wh[p] < gap:
            new = max(loads[hi] - wh[p], loads[lo] + wh[p])
            if new < best_new:
                best_new, best_out, best_in = new, int(order_h[p]), -1
    # Swap: a difference w_i - w_j closest to half the gap.
    if len(in_lo):
        order_l = in_lo[np.argsort(w[in_lo], kind="stable")]
        wl = w[order_l]
        idx = np.searchsorted(wl, wh - gap / 2.0)
        for shift in (-1, 0):
            j = np.clip(idx + shift, 0, len(wl) - 1)
            d = wh - wl[j]
            ok = (d > 0) & (d < gap)
            if not ok.any():
                continue
            new_pair = np.where(ok, np.maximum(loads[hi] - d, loads[lo] + d), np.inf)
            p = int(np.argmin(new_pair))
            if new_pair[p] < best_new:
                best_new, best_out, best_in = (
                    float(new_pair[p]),
                    int(order_h[p]),
                    int(order_l[j[p]]),
                )
    if best_out < 0:
        return None
    to_hi = in_hi[in_hi != best_out]
    if best_in >= 0:
        to_hi = np.append(to_hi, best_in)
    return _PairStep(best_new, hi, lo, to_hi, pool)


def _apply(step: _PairStep, assignment: IntArray, loads: FloatArray, w: FloatArray) -> None:
    assignment[step.pool] = step.lo
    assignment[step.to_hi] = step.hi
    loads[step.hi] = float(w[step.to_hi].sum())
    loads[step.lo] = float(w[step.pool].sum()) - loads[step.hi]


def _triple_step(
    w: FloatArray, assignment: IntArray, loads: FloatArray, m: int, eps: float
) -> bool:
    """Re-split the heaviest bin with two light ones exactly when few items; True if improved."""
    k = len(loads)
    counts = np.bincount(assignment, minlength=k)
    light = [int(b) for b in np.argsort(loads, kind="stable") if b != m][:TRIPLE_LIGHT_BINS]
    best_new = loads[m] - eps
    best: tuple[IntArray, IntArray, tuple[int, int, int]] | None = None
    for x, a in enumerate(light):
        for b in light[x + 1 :]:
            size = int(counts[m] + counts[a] + counts[b])
            if size > TRIPLE_EXACT_MAX_ITEMS or size < 3:
                continue
            trio = (m, a, b)
            pool = np.flatnonzero((assignment == m) | (assignment == a) | (assignment == b))
            digits, onehot = _ternary(size)
            split = onehot @ w[pool]
            spans = np.maximum(np.maximum(split[:, 0], split[:, 1]), split[:, 2])
            pick = int(np.argmin(spans))
            if spans[pick] < best_new:
                best_new = float(spans[pick])
                best = (pool, digits[pick].astype(np.int64), trio)
    if best is None:
        return False
    pool, digit, trio = best
    assignment[pool] = np.asarray(trio, dtype=np.int64)[digit]
    for c in trio:
        loads[c] = float(w[assignment == c].sum())
    return True


_TERNARY: dict[int, tuple[npt.NDArray[np.int8], FloatArray]] = {}


def _ternary(n: int) -> tuple[npt.NDArray[np.int8], FloatArray]:
    """Every assignment of n items to 3 bins (rows), and its (3^n, 3, n) one-hot weights."""
    if n not in _TERNARY:
        codes = np.arange(3**n, dtype=np.int64)
        digits = ((codes[:, None] // 3 ** np.arange(n)) % 3).astype(np.int8)
        onehot = np.stack([(digits == c) for c in range(3)], axis=1).astype(np.float64)
        _TERNARY[n] = (digits, onehot)
    return _TERNARY[n]


def _best_two_way(wp: FloatArray) -> npt.NDArray[np.bool_]:
    """Exact 2-way split of a few items: the subset whose sum is closest to half from below."""
    n = len(wp)
    half_n = n // 2
    first, second = wp[:half_n], wp[half_n:]
    codes1 = np.arange(1 << len(first), dtype=np.int64)
    codes2 = np.arange(1 << len(second), dtype=np.int64)
    bits1 = ((codes1[:, None] >> np.arange(len(first))) & 1).astype(bool)
    bits2 = ((codes2[:, None] >> np.arange(len(second))) & 1).astype(bool)
    sums1 = bits1 @ first if len(first) else np.zeros(1)
    sums2 = bits2 @ second if len(second) else np.zeros(1)
    order2 = np.argsort(sums2, kind="stable")
    sorted2 = sums2[order2]
    half = float(wp.sum()) / 2.0
    idx = np.searchsorted(sorted2, half - sums1 + _REL_EPS * max(half, 1.0), side="right") - 1
    valid = idx >= 0
    totals = np.where(valid, sums1 + sorted2[np.clip(idx, 0, None)], -np.inf)
    a = int(np.argmax(totals))
    b = int(order2[idx[a]])
    return np.concatenate([bits1[a], bits2[b]])


def _karmarkar_karp(w: FloatArray, k: int) -> Partition:
    """Largest differencing: repeatedly merge the two most unbalanced partial partitions."""
    # Each heap entry: (-spread, tie, loads sorted desc, groups aligned with loads).
    heap: list[tuple[float, int, list[float], list[list[int]]]] = []
    for i in range(len(w)):
        loads = [float(w[i])] + [0.0] * (k - 1)
        groups: list[list[int]] = [[i]] + [[] for _ in range(k - 1)]
        heap.append((-float(w[i]), i, loads, groups))
    heapq.heapify(heap)
    tie = len(w)
    while len(heap) > 1:
        _, _, la, ga = heapq.heappop(heap)
        _, _, lb, gb = heapq.heappop(heap)
        # Heaviest of one with lightest of the other.
        merged = sorted(
            ((la[x] + lb[k - 1 - x], ga[x] + gb[k - 1 - x]) for x in range(k)),
            key=lambda t: -t[0],
        )
        floor = merged[-1][0]
        loads = [t[0] - floor for t in merged]
        groups = [t[1] for t in merged]
        heapq.heappush(heap, (-(loads[0] - loads[-1]), tie, loads, groups))
        tie += 1
    assignment = np.zeros(len(w), dtype=np.int64)
    for b, group in enumerate(heap[0][3]):
        assignment[group] = b
    loads_arr = np.bincount(assignment, weights=w, minlength=k).astype(np.float64)
    return Partition(assignment, loads_arr, "kk")


def _branch_and_bound(w: FloatArray, k: int, upper: float) -> Partition | None:
    """Exact search for tiny instances; None when it proves nothing better than `upper`."""
    order = np.argsort(-w, kind="stable")
    ws = w[order].tolist()
    n = len(ws)
    bound = lower_bound(w, k)
    loads = [0.0] * k
    current = [0] * n
    best: list[int] | None = None
    best_span = upper * (1 - 1e-12)
    nodes = 0

    def search(pos: int) -> bool:
        nonlocal best, best_span, nodes
        nodes += 1
        if nodes > EXACT_MAX_NODES:
            return True
        if pos == n:
            span = max(loads)
            if span < best_span:
                best_span, best = span, current.copy()
            return best_span <= bound * (1 + 1e-12)
        seen: set[float] = set()
        for b in range(k):
            if loads[b] in seen:  # bins with equal loads are interchangeable
                continue
            seen.add(loads[b])
            if loads[b] + ws[pos] >= best_span:
                continue
            loads[b] += ws[pos]
            current[pos] = b
            done = search(pos + 1)
            loads[b] -= ws[pos]
            if done:
                return True
        return False

    search(0)
    if best is None:
        return None
    assignment = np.zeros(n, dtype=np.int64)
    assignment[order] = np.asarray(best, dtype=np.int64)
    loads_arr = np.bincount(assignment, weights=w, minlength=k).astype(np.float64)
    return Partition(assignment, loads_arr, "exact")


def _bin_completion(w: FloatArray, k: int, capacity: float, max_nodes: int) -> IntArray | None:
    """Items packed into k bins of `capacity`, or None if they do not fit or the budget ran out.

    Bin completion: fill one bin at a time around the largest item left, trying the subsets
    of the others that leave at most the total spare room unused, larger items first.
    """
    order = np.argsort(-w, kind="stable")
    items = [(float(w[i]), int(i)) for i in order]
    packed: list[list[int]] = []
    nodes = 0

    def fill(rest: list[tuple[float, int]], bins_left: int) -> bool | None:
        nonlocal nodes
        if not rest:
            return True
        spare = bins_left * capacity - sum(x[0] for x in rest)
        if bins_left == 0 or spare < 0:
            return False
        if bins_left == 1:
            packed.append([x[1] for x in rest])
            return True
        # Items over half the capacity need a bin each.
        if sum(1 for x in rest if x[0] > capacity / 2) > bins_left:
            return False
        first, others = rest[0], rest[1:]
        ws = [x[0] for x in others]
        suffix = list(itertools.accumulate(reversed(ws), initial=0.0))[::-1]
        room = capacity - first[0]
        need = room - spare  # the bin may waste at most the spare room
        neg = [-x for x in ws]  # ascending, for bisect
        chosen: list[int] = []

        def subsets(start: int, used: float) -> Iterator[None]:
            # Yields with `chosen` holding a subset whose sum lies in [need, room].
            nonlocal nodes
            # Skip items too big to fit; [lo, hi) are the ones that complete the bin.
            lo = bisect.bisect_left(neg, used - room, start)
            hi = bisect.bisect_right(neg, used - need, lo)
            previous = -1.0
            for t in range(lo, len(ws)):
                if used + suffix[t] < need or nodes > max_nodes:
                    return
                nodes += 1
                wt = ws[t]
                if wt == previous:
                    continue  # equal items are interchangeable
                previous = wt
                chosen.append(t)
                yield from subsets(t + 1, used + wt)
                if t < hi:
                    yield None
                chosen.pop()

        for _ in itertools.chain(subsets(0, 0.0), [None] if need <= 0 else []):
            if nodes > max_nodes:
                return None
            taken = set(chosen)
            packed.append([first[1]] + [others[t][1] for t in chosen])
            result = fill([x for t, x in enumerate(others) if t not in taken], bins_left - 1)
            if result:
                return True
            packed.pop()
            if result is None:
                return None
        return None if nodes > max_nodes else False

    if not fill(items, k):
        return None
    assignment = np.zeros(len(w), dtype=np.int64)
    for b, group in enumerate(packed):
        assignment[group] = b
    return assignment
