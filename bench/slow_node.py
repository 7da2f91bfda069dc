"""A pytest plugin for benchmarks: every test's call is followed by a sleep of
(BENCH_SLOW_FACTOR - 1) x the CPU time it used, so the node is that much slower whatever else
the machine runs, and a suite of computing tests becomes one whose tests mostly wait.

The sleep follows the call's CPU time, not its wall: a waiting test's wait (a network call, a
disk, a subprocess) does not grow when the machine's cores are shared, and on a 2-core machine
three or four nodes share them. Sleeping in proportion to the wall multiplied that sharing
too (a test that waited for a core then waited that long again, times the factor).

    pytest -p bench.slow_node ...   (with BENCH_SLOW_FACTOR=2 in the environment)
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Run the test, then sleep (factor - 1) x the CPU time it used (at most its wall)."""
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        return (yield)
    finally:
        factor = float(os.environ.get("BENCH_SLOW_FACTOR") or 1.0)
        worked = min(time.process_time() - cpu, time.perf_counter() - wall)
        time.sleep(max(factor - 1.0, 0.0) * max(worked, 0.0))
