"""Covering-array size and speed: laptime's generator against allpairspy, measured in one run.

    .venv/bin/python -m bench.bench_covering            # all cases (about a minute)
    .venv/bin/python -m bench.bench_covering --quick    # a few seconds

For each level configuration both generators build a strength-2 (pairwise) covering, and a
strength-1 one where allpairspy supports it; every result is checked for coverage. Ratios
are laptime / allpairspy (size < 1 = fewer rows; time < 1 = faster).
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable, Sequence
from functools import partial

from allpairspy import AllPairs

from analysis.reduce.covering import build_covering, is_covering, lower_bound

QUICK = [(3, 2, 2, 2, 2, 2), (3, 3, 3, 3), (2,) * 10, (4, 4, 4, 4, 4)]
FULL = [
    *QUICK,
    (5, 4, 3, 2, 2, 2),
    (3,) * 13,
    (4,) * 10,
    (10, 10, 10, 10),
    (2,) * 30,
    (6, 5, 4, 3, 3, 2, 2, 2),
]


def laptime_rows(levels: Sequence[int], strength: int) -> list[tuple[int, ...]]:
    """Rows from our generator."""
    return list(build_covering(levels, strength).rows)


def allpairs_rows(levels: Sequence[int], strength: int) -> list[tuple[int, ...]]:
    """Rows from allpairspy (it does not special-case a single argument)."""
    params = [list(range(n)) for n in levels]
    return [tuple(row) for row in AllPairs(params, n=strength)]


def best_time(fn: Callable[[], object], repeat: int) -> float:
    """Fastest of `repeat` wall-clock runs, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: Sequence[str] | None = None) -> None:
    """Print one table row per (levels, strength)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="a few small cases only")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    cases = QUICK if args.quick else FULL
    header = (
        f"{'levels':<26} {'t':>1} {'bound':>5} {'ours':>5} {'apairs':>6} {'size x':>6} "
        f"{'ours ms':>8} {'apairs ms':>9} {'time x':>7}"
    )
    print(header)
    print("-" * len(header))
    size_ratios, time_ratios = [], []
    for levels in cases:
        for strength in (1, 2):
            ours = laptime_rows(levels, strength)
            theirs = allpairs_rows(levels, strength)
            for name, rows in (("laptime", ours), ("allpairspy", theirs)):
                if not is_covering(rows, levels, strength):
                    raise SystemExit(f"{name} missed tuples for {levels} strength {strength}")
            t_ours = best_time(partial(laptime_rows, levels, strength), args.repeat)
            t_theirs = best_time(partial(allpairs_rows, levels, strength), args.repeat)
            size_ratios.append(len(ours) / len(theirs))
            time_ratios.append(t_ours / t_theirs)
            label = _label(levels)
            print(
                f"{label:<26} {strength:>1} {lower_bound(levels, strength):>5} {len(ours):>5} "
                f"{len(theirs):>6} {len(ours) / len(theirs):>6.2f} {t_ours * 1e3:>8.1f} "
                f"{t_theirs * 1e3:>9.1f} {t_ours / t_theirs:>7.2f}"
            )
    print()
    print(
        f"geometric mean ratio (laptime / allpairspy): size {_gmean(size_ratios):.2f}, "
        f"time {_gmean(time_ratios):.2f}"
    )


def _label(levels: Sequence[int]) -> str:
    """`3x2^5` style."""
    parts: list[str] = []
    i = 0
    while i < len(levels):
        j = i
        while j < len(levels) and levels[j] == levels[i]:
            j += 1
        parts.append(f"{levels[i]}^{j - i}" if j - i > 1 else str(levels[i]))
        i = j
    return "x".join(parts)


def _gmean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


if __name__ == "__main__":
    main()
