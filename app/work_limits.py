"""Limits on one request's (or one command's) work; time limits are checked between pieces.

A limit is checked before committing to the next piece (the AlgoPerf lesson,
docs/story.md#budgets-are-checked-before-the-next-piece-of-work): the work answers with what
is done instead of running on unbounded.
"""

from __future__ import annotations

import time
from collections.abc import Callable

# Wall-clock seconds a split plan may take (the API, the pages and `laptime plan`). The worst
# allowed request (64 job counts over a large cell) needs far less on one core; the limit is
# there for slower machines and larger data, and the answer then says it is incomplete.
PLAN_TIME_LIMIT_S = 20.0
# Most parametrize explosions one answer proposes covering sets for (API `top`, CLI `--top`):
# each proposal is a covering-array search.
MAX_TOP_EXPLOSIONS = 100


def stop_after(seconds: float, *, also: Callable[[], bool] | None = None) -> Callable[[], bool]:
    """A `should_stop` that turns True `seconds` from now, or as soon as `also()` does."""
    deadline = time.monotonic() + seconds

    def should_stop() -> bool:
        return time.monotonic() >= deadline or (also is not None and also())

    return should_stop
