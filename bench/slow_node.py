"""A pytest plugin for benchmarks: every test's call runs BENCH_SLOW_FACTOR times as long (it
sleeps the difference), a node exactly that much slower whatever else the machine runs.

    pytest -p bench.slow_node ...   (with BENCH_SLOW_FACTOR=2 in the environment)
"""

from __future__ import annotations

import os
import time
from collections.abc import Generator

import pytest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Run the test, then sleep (factor - 1) x its time."""
    begun = time.perf_counter()
    try:
        return (yield)
    finally:
        factor = float(os.environ.get("BENCH_SLOW_FACTOR") or 1.0)
        time.sleep(max(factor - 1.0, 0.0) * (time.perf_counter() - begun))
