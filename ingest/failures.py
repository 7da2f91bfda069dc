"""Which database errors are the moment's (retry, uncounted) and which are the report's (fail).

Transient: the connection was lost, the server is shutting down or out of a resource (disk,
memory, connections), or the transaction lost a race (serialization failure, deadlock). The
same upload succeeds later, so the worker backs off and retries without spending an attempt.
Input faults: the report's data cannot be stored (a data exception, a constraint the rows
violate, a row over a size limit); retrying cannot help, so the upload fails with its reason.
Anything else (a bug) spends an attempt, and `max_attempts` of them fail the upload.
"""

from __future__ import annotations

import random

import psycopg

# SQLSTATE classes: 08 connection exception, 40 transaction rollback, 53 insufficient
# resources, 57 operator intervention (admin/crash shutdown, cancel), 58 system error (I/O).
_TRANSIENT_CLASSES = frozenset({"08", "40", "53", "57", "58"})
_TRANSIENT_STATES = frozenset({"55P03"})  # lock_not_available
# 22 data exception, 23 integrity constraint violation, 54 program limit exceeded.
_INPUT_CLASSES = frozenset({"22", "23", "54"})


def is_transient(exc: BaseException) -> bool:
    """True when the error says nothing about the upload and a later try can succeed."""
    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is None:
        # No SQLSTATE from a server: the connection broke or could not be made.
        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
    return state[:2] in _TRANSIENT_CLASSES or state in _TRANSIENT_STATES


def is_input_fault(exc: BaseException) -> bool:
    """True when the database refused the report's own data."""
    return isinstance(exc, psycopg.Error) and (exc.sqlstate or "")[:2] in _INPUT_CLASSES


def describe(exc: BaseException) -> str:
    """One line naming the error: SQLSTATE and the server's message where there is one."""
    state = getattr(exc, "sqlstate", None)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"{type(exc).__name__} ({state}): {text}" if state else f"{type(exc).__name__}: {text}"


class Backoff:
    """Capped exponential backoff with jitter, so workers that lost the database together
    do not all come back in the same instant."""

    def __init__(self, first_s: float = 0.5, cap_s: float = 10.0) -> None:
        self.first_s = first_s
        self.cap_s = cap_s
        self._failures = 0

    def next_delay(self) -> float:
        """The next wait: a random point in the upper half of first * 2**failures, capped."""
        ceiling = min(self.cap_s, self.first_s * 2.0**self._failures)
        self._failures += 1
        return random.uniform(ceiling / 2, ceiling)

    def reset(self) -> None:
        """Forget the failures after a success."""
        self._failures = 0
