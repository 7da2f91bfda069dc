"""Which rollups each project's readers asked for lately: what a refresh after a commit redoes."""

from __future__ import annotations

import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Engine

from analysis.filters import Filters


@dataclass(frozen=True)
class HotRead:
    """The arguments of one rollup read (those of `project_rollup`)."""

    filters: Filters
    by: str
    within: str | None
    sort: str
    descending: bool
    limit: int | None

    @property
    def key(self) -> tuple[object, ...]:
        """Equal for equal reads (Filters itself is not hashable)."""
        return (self.filters.key, self.by, self.within, self.sort, self.descending, self.limit)


class HotReads:
    """The latest `per_project` distinct reads of each project made within `keep_s` seconds."""

    def __init__(
        self,
        *,
        per_project: int = 32,
        keep_s: float = 900.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.per_project = per_project
        self.keep_s = keep_s
        self._clock = clock
        self._reads: dict[int, OrderedDict[tuple[object, ...], tuple[HotRead, float]]] = {}
        self._lock = threading.Lock()

    def note(self, project_id: int, read: HotRead) -> None:
        """Remember that `read` was asked for now."""
        with self._lock:
            reads = self._reads.setdefault(project_id, OrderedDict())
            reads.pop(read.key, None)
            reads[read.key] = (read, self._clock())
            while len(reads) > self.per_project:
                reads.popitem(last=False)

    def recent(self, project_id: int) -> list[HotRead]:
        """The project's reads asked for within `keep_s`, newest first."""
        horizon = self._clock() - self.keep_s
        with self._lock:
            reads = self._reads.get(project_id)
            if not reads:
                return []
            for key in [key for key, (_, at) in reads.items() if at < horizon]:
                del reads[key]
            if not reads:
                del self._reads[project_id]
                return []
            return [read for read, _ in reversed(reads.values())]

    def projects(self) -> list[int]:
        """Projects with reads asked for within `keep_s`."""
        with self._lock:
            candidates = list(self._reads)
        return [project for project in candidates if self.recent(project)]


_HOT_OF_ENGINE: weakref.WeakKeyDictionary[Engine, HotReads] = weakref.WeakKeyDictionary()
_HOT_LOCK = threading.Lock()


def hot_reads(engine: Engine) -> HotReads:
    """The reads this process answered lately for the database of `engine`."""
    with _HOT_LOCK:
        hot = _HOT_OF_ENGINE.get(engine)
        if hot is None:
            hot = _HOT_OF_ENGINE[engine] = HotReads()
        return hot
