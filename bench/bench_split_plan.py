"""Split quality and speed: laptime's partition engine against pytest-split's least_duration.

Quality is the makespan (longest job's test time) over the lower bound
max(largest item, total / jobs), worst and mean over random instances of three families:
  reachable  jobs made of 2-5 random pieces of the same total, so the bound is reachable
  similar    2-5 items of similar size (60-100 s) per job (the bound is often unreachable)
  suite      a realistic suite: 2,000 lognormal test times (many small, few large)
Speed is the time to partition 100,000 tests and to run the whole `plan_splits` on them.

    .venv/bin/python -m bench.bench_split_plan            # default run, well under 2 minutes
    .venv/bin/python -m bench.bench_split_plan --quick    # a few seconds
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from pytest_split.algorithms import Algorithms

from analysis.split.partition import lower_bound, partition_items
from analysis.split.plan import Granularity, SplitOptions, plan_splits
from bench.common import one_run


class _Item:
    """The two things pytest-split reads from a pytest item."""

    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid

    def __str__(self) -> str:
        return self.nodeid


def pytest_split_makespan(weights: np.ndarray, k: int) -> float:
    """Longest group of pytest-split's least_duration on items named in input order."""
    items: list[Any] = [_Item(f"t{i:06d}") for i in range(len(weights))]
    durations = {item.nodeid: float(w) for item, w in zip(items, weights, strict=True)}
    return max(g.duration for g in Algorithms.least_duration.value(k, items, durations))


def reachable(rng: np.random.Generator) -> tuple[np.ndarray, int]:
    k = int(rng.integers(2, 13))
    per = int(rng.integers(2, 6))
    pieces = [np.diff(np.r_[0.0, np.sort(rng.uniform(0, 1, per - 1)), 1.0]) * 600 for _ in range(k)]
    return rng.permutation(np.concatenate(pieces)), k


def similar(rng: np.random.Generator) -> tuple[np.ndarray, int]:
    k = int(rng.integers(2, 13))
    return rng.uniform(60, 100, k * int(rng.integers(2, 6))), k


def suite(rng: np.random.Generator) -> tuple[np.ndarray, int]:
    return rng.lognormal(0.0, 1.5, 2000), int(rng.integers(2, 17))


def quality(
    name: str, make: Callable[[np.random.Generator], tuple[np.ndarray, int]], count: int
) -> None:
    rng = np.random.default_rng(20240501)
    ours, theirs = [], []
    for _ in range(count):
        weights, k = make(rng)
        bound = lower_bound(weights, k)
        ours.append(partition_items(weights, k).makespan / bound)
        theirs.append(pytest_split_makespan(weights, k) / bound)
    o, t = np.asarray(ours), np.asarray(theirs)
    print(
        f"{name:<10} n={count:<4} pytest-split worst {t.max():.4f} mean {t.mean():.4f} | "
        f"laptime worst {o.max():.4f} mean {o.mean():.4f} | "
        f"laptime > 1% off: {(o > 1.01).sum()}, pytest-split > 1% off: {(t > 1.01).sum()}"
    )


def speed(n: int, k: int) -> None:
    rng = np.random.default_rng(7)
    weights = rng.lognormal(0.0, 1.5, n)
    start = time.perf_counter()
    theirs = pytest_split_makespan(weights, k)
    t_theirs = time.perf_counter() - start
    start = time.perf_counter()
    part = partition_items(weights, k)
    t_ours = time.perf_counter() - start
    bound = lower_bound(weights, k)
    print(
        f"{n} tests, {k} jobs: pytest-split {t_theirs:.3f}s (makespan/bound "
        f"{theirs / bound:.6f}); laptime partition {t_ours:.3f}s ({part.makespan / bound:.6f}); "
        f"ratio {t_ours / t_theirs:.2f}x"
    )
    ids = [f"tests/test_m{i % 500:03d}.py::test_{i}" for i in range(n)]
    results, runs = one_run(ids, weights)
    cases: list[tuple[Granularity, tuple[int, int]]] = [
        ("test", (k, k)),
        ("auto", (k, k)),
        ("auto", (2, k)),
    ]
    for granularity, jobs in cases:
        start = time.perf_counter()
        plan = plan_splits(results, runs, SplitOptions(jobs=jobs, granularity=granularity))
        elapsed = time.perf_counter() - start
        print(
            f"plan_splits {n} tests, jobs {jobs[0]}-{jobs[1]}, granularity {granularity}: "
            f"{elapsed:.3f}s (estimates, layout, {len(plan.pareto)} job counts, snippets), "
            f"verdict {plan.verdict}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer instances, fewer tests")
    args = parser.parse_args()
    count = 30 if args.quick else 200
    quality("reachable", reachable, count)
    quality("similar", similar, count)
    quality("suite", suite, max(count // 10, 5))
    speed(20_000 if args.quick else 100_000, 8)


if __name__ == "__main__":
    main()
