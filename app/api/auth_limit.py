"""Failed authentication, limited per client address with bounded memory.

A token bucket per address: each failed authentication takes one token, tokens come back at
`failures / window_s` per second. An address with an empty bucket is refused (429) before its
token is even looked up, so guessing stays slow; addresses that never fail cost nothing, so
valid tokens are never slowed. The table holds at most `max_clients` addresses (least recently
failed evicted first). Thread-safe: sync routes run in a thread pool.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable


class FailedAuthLimiter:
    """Per-address budget of failed authentications (see the module docstring)."""

    def __init__(
        self,
        *,
        failures: int = 30,
        window_s: float = 60.0,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = float(failures)
        self.rate = failures / window_s
        self.max_clients = max_clients
        self._clock = clock
        self._lock = threading.Lock()
        # address -> (tokens left, when they were counted)
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (self.capacity, now))
        return min(self.capacity, tokens + (now - at) * self.rate)

    def retry_after_s(self, client: str) -> int | None:
        """Whole seconds until `client` may try again, or None when it may try now."""
        with self._lock:
            if client not in self._buckets:
                return None
            tokens = self._tokens(client, self._clock())
        if tokens >= 1.0:
            return None
        return max(1, math.ceil((1.0 - tokens) / self.rate))

    def record_failure(self, client: str) -> None:
        """Take one token from `client`'s bucket."""
        with self._lock:
            now = self._clock()
            tokens = self._tokens(client, now)
            self._buckets[client] = (max(0.0, tokens - 1.0), now)
            self._buckets.move_to_end(client)
            while len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._buckets)
