"""Listening for commits that changed a project's data (NOTIFY sent by ingest and prune)."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

import psycopg

from ingest.store import ALL_PROJECTS, DATA_CHANNEL


class DataNotices:
    """A LISTEN connection of its own: `wait` returns the projects whose data changed."""

    def __init__(self, dsn: str, *, application_name: str = "laptime read warmer") -> None:
        self._dsn = dsn
        self._name = application_name
        self._conn: psycopg.Connection[Any] | None = None

    def __enter__(self) -> DataNotices:
        # keepalives notice a database that went away while nothing was said.
        self._conn = psycopg.connect(
            self._dsn,
            autocommit=True,
            connect_timeout=10,
            application_name=self._name,
            keepalives=1,
            keepalives_idle=30,
        )
        self._conn.execute(f"LISTEN {DATA_CHANNEL}")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def wait(self, timeout_s: float, settle_s: float = 0.0) -> set[int | None]:
        """Projects changed (None: every project) by commits within `timeout_s`; once one is
        heard, others arriving within `settle_s` join it (one refresh for a burst)."""
        assert self._conn is not None, "use DataNotices as a context manager"
        changed: set[int | None] = set()
        for notice in self._conn.notifies(timeout=timeout_s, stop_after=1):
            changed.add(_project_of(notice.payload))
        if not changed:
            return changed
        deadline = time.monotonic() + settle_s
        while (left := deadline - time.monotonic()) > 0:
            for notice in self._conn.notifies(timeout=left):
                changed.add(_project_of(notice.payload))
        # Whatever else is already queued joins this batch without waiting.
        for notice in self._conn.notifies(timeout=0):
            changed.add(_project_of(notice.payload))
        return changed


def _project_of(payload: str) -> int | None:
    if payload == ALL_PROJECTS or not payload.isdigit():
        return None
    return int(payload)
