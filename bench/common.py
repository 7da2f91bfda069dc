"""Helpers shared by benchmarks: a throwaway embedded database and timing."""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path


@contextlib.contextmanager
def scratch_database(keep_home: Path | None = None) -> Iterator[tuple[str, str]]:
    """(SQLAlchemy URL, libpq DSN) of a migrated embedded server.

    Throwaway by default; with `keep_home` the server's data lives (and stays) there, so a
    large history is loaded once and timed again after a change.
    """
    from app.db.embedded import database_url, libpq_url
    from app.db.engine import migrate
    from app.settings import Settings

    with contextlib.ExitStack() as stack:
        home = keep_home or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="laptime-bench-"))
        )
        settings = Settings(home=home, database_url=None)
        with database_url(settings) as url:
            migrate(url)
            yield url, libpq_url(url)


def best_of(rounds: int, fn: Callable[[], object]) -> tuple[float, list[float]]:
    """Median and all timings (seconds) of `rounds` calls of fn."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), times
