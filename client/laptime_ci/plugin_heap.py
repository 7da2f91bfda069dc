"""Heap-bound test time for the pytest plugin.

Some tests walk the whole heap: an explicit `gc.collect()` (leak checks, fixture teardowns)
visits every object the garbage collector tracks, and `gc.get_objects()` / `get_referrers()`
/ `get_referents()` scans hand them all to Python code. Their cost follows how many objects
the process holds, which depends on what ran before them in the same process: networkx's
`test_memory_leak` took 1.0-1.2 s after 5,000 other tests (420k objects) and 0.3 s after
1,000 (150k). A split job holds fewer objects than the run it was planned from, so the job
model rescales this time; it needs the plugin to say which time it is and how big the heap
was.

The plugin wraps those four `gc` functions while it measures (module attributes, put back on
unconfigure): a wrapper adds one counter and, for `collect`, two clock reads. Code that bound
`gc.collect` to another name before the plugin loaded is not seen; pytest loads the plugin
before any test module. Automatic collections are not counted: the interpreter runs a full
one after the surviving heap grew by a quarter, so its cost per allocation does not grow
with the heap.
"""

from __future__ import annotations

import functools
import gc
import time
from typing import Any, Callable, Optional

from laptime_ci.plugin_timing import largest_of

_SCANS = ("get_objects", "get_referrers", "get_referents")
# (seconds in gc.collect, heap scans, objects the first whole-heap scan saw)
HeapReading = tuple[float, int, Optional[int]]


def tracked_objects() -> int:
    """Objects the garbage collector tracks now (one walk of the heap: call it rarely)."""
    return len(_original("get_objects")())


def _original(name: str) -> Callable[..., Any]:
    function = getattr(gc, name)
    return getattr(function, "__laptime_wrapped__", function)  # type: ignore[no-any-return]


class HeapMeter:
    """Per test: seconds in explicit `gc.collect()`, heap scans, the heap a scan saw."""

    def __init__(self) -> None:
        self.gc_s = 0.0
        self.scans = 0
        self.objects: int | None = None
        self._installed: dict[str, Callable[..., Any]] = {}

    def install(self) -> None:
        """Wrap the `gc` functions (once; a nested session's meter wraps the outer's)."""
        if self._installed:
            return
        for name in ("collect", *_SCANS):
            current = getattr(gc, name)
            self._installed[name] = current
            setattr(gc, name, self._wrap(name, current))

    def uninstall(self) -> None:
        """Put back what `install` replaced, where nobody replaced it since."""
        for name, previous in self._installed.items():
            current = getattr(gc, name)
            if getattr(current, "__laptime_meter__", None) is self:
                setattr(gc, name, previous)
        self._installed = {}

    def begin_test(self) -> None:
        """A test starts: its own counts start at zero."""
        self.gc_s = 0.0
        self.scans = 0
        self.objects = None

    def reading(self) -> HeapReading:
        """(seconds in gc.collect, heap scans, objects the first full scan saw) so far."""
        return self.gc_s, self.scans, self.objects

    def _wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        if name == "collect":

            @functools.wraps(function)
            def collect(*args: Any, **kwargs: Any) -> Any:
                started = time.perf_counter()
                try:
                    return function(*args, **kwargs)
                finally:
                    self.gc_s += time.perf_counter() - started

            wrapper = collect
        else:

            @functools.wraps(function)
            def scan(*args: Any, **kwargs: Any) -> Any:
                self.scans += 1
                answer = function(*args, **kwargs)
                whole_heap = name == "get_objects" and not args and not kwargs
                if whole_heap and self.objects is None and isinstance(answer, list):
                    self.objects = len(answer)
                return answer

            wrapper = scan
        wrapper.__laptime_meter__ = self  # type: ignore[attr-defined]
        wrapper.__laptime_wrapped__ = _original(name)  # type: ignore[attr-defined]
        return wrapper


class HeapCensus:
    """The process's gc-tracked objects when collection starts, ends, and after the tests."""

    def __init__(self) -> None:
        self.start: int | None = None
        self.collected: int | None = None
        self.end: int | None = None

    def summary(self) -> dict[str, int | None]:
        """The session keys (JSON-able, for xdist's workeroutput too)."""
        return {
            "heap_objects_start": self.start,
            "heap_objects_collected": self.collected,
            "heap_objects_end": self.end,
        }


def merge_worker_census(summaries: list[dict[str, Any]]) -> dict[str, int | None]:
    """The session's heap figures from xdist workers' own: the largest of each."""
    keys = ("heap_objects_start", "heap_objects_collected", "heap_objects_end")
    return {key: largest_of(summaries, key) for key in keys}
