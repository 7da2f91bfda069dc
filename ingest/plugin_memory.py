"""Peak RSS measurement for the pytest plugin: per-test windows and the job's peak memory.

Method (docs/plugin.md has the long form): a daemon thread samples the process's current RSS
every few milliseconds, and each window also takes the `ru_maxrss` high-water mark when it
grew during the window. Every window carries a generation number; a sample read for an older
generation is dropped, so a spike of one test can never leak into the next test's peak.

Stdlib only at import time: the plugin imports this module from pytest's entry point.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

MIB = 1024 * 1024
DEFAULT_INTERVAL_S = 0.005

RssReader = Callable[[], float | None]


def _statm_reader() -> RssReader | None:
    """Current RSS from /proc/self/statm (Linux), read with pread on one open descriptor."""
    try:
        fd = os.open("/proc/self/statm", os.O_RDONLY)
    except OSError:
        return None
    page_mib = os.sysconf("SC_PAGE_SIZE") / MIB

    def read() -> float | None:
        try:
            return int(os.pread(fd, 128, 0).split()[1]) * page_mib
        except (OSError, IndexError, ValueError):
            return None

    return read


def _psutil_reader() -> RssReader | None:
    """Current RSS through psutil, for platforms without /proc (macOS, Windows)."""
    try:
        import psutil
    except ImportError:
        return None
    process = psutil.Process()

    def read() -> float | None:
        try:
            return float(process.memory_info().rss) / MIB
        except Exception:  # the process table can refuse us; a missing sample is harmless
            return None

    return read


def current_rss_reader() -> RssReader | None:
    """The cheapest available reader of this process's current RSS in MiB, or None."""
    return _statm_reader() or _psutil_reader()


try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]

# ru_maxrss is in KiB on Linux, bytes on macOS.
_MAXRSS_PER_MIB = MIB if sys.platform == "darwin" else 1024


def max_rss_mib() -> float | None:
    """This process's RSS high-water mark (`ru_maxrss`) in MiB, None where unsupported."""
    if resource is None:
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / _MAXRSS_PER_MIB


def children_max_rss_mib() -> float | None:
    """The largest `ru_maxrss` among this process's reaped children, in MiB."""
    if resource is None:
        return None
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / _MAXRSS_PER_MIB


class PeakRssMonitor:
    """Tracks the peak RSS reached inside consecutive windows (one window per test)."""

    def __init__(
        self,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        read_rss_mib: RssReader | None = None,
        read_max_rss_mib: Callable[[], float | None] = max_rss_mib,
    ) -> None:
        self.interval_s = interval_s
        self._read_rss = read_rss_mib if read_rss_mib is not None else current_rss_reader()
        self._read_max_rss = read_max_rss_mib
        self._lock = threading.Lock()
        self._generation = 0
        self._window_peak: float | None = None
        self._window_max_rss_start: float | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.samples_taken = 0  # by the sampling thread; lets a test wait for fresh samples
        # The last final reading (rss, max_rss), reused as the next window's start.
        self._handover: tuple[float | None, float | None] | None = None

    @property
    def generation(self) -> int:
        """Number of the current window (0 before the first)."""
        return self._generation

    def begin_window(self) -> int:
        """Start a new window at the current RSS; returns its generation.

        Right after a window's final reading (the previous test's teardown) that reading is
        the starting point: nothing but pytest's bookkeeping ran in between, and it saves
        two system calls per test.
        """
        handover = self._handover
        self._handover = None
        if handover is not None:
            rss, max_rss = handover
        else:
            rss = self._read_rss() if self._read_rss is not None else None
            max_rss = self._read_max_rss()
        with self._lock:
            self._generation += 1
            self._window_peak = rss
            self._window_max_rss_start = max_rss
            generation = self._generation
        if self._thread is None and self.interval_s > 0 and self._read_rss is not None:
            self._start_sampler()
        return generation

    def record_sample(self, generation: int, rss_mib: float | None) -> bool:
        """Fold one RSS reading taken during window `generation`; stale readings are dropped."""
        if rss_mib is None:
            return False
        with self._lock:
            if generation != self._generation:
                return False
            if self._window_peak is None or rss_mib > self._window_peak:
                self._window_peak = rss_mib
            return True

    def window_peak_mib(self) -> float | None:
        """Peak RSS of the current window so far, including a reading taken now."""
        rss = self._read_rss() if self._read_rss is not None else None
        max_rss = self._read_max_rss()
        self._handover = (rss, max_rss)
        with self._lock:
            peak = self._window_peak
            if rss is not None and (peak is None or rss > peak):
                peak = self._window_peak = rss
            start = self._window_max_rss_start
        # A high-water mark that rose during the window was reached during the window.
        if max_rss is not None and start is not None and max_rss > start:
            peak = max_rss if peak is None else max(peak, max_rss)
        return peak

    def close(self) -> None:
        """Stop the sampling thread."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None

    def _start_sampler(self) -> None:
        self._thread = threading.Thread(
            target=self._sample_forever, name="laptime-rss-sampler", daemon=True
        )
        self._thread.start()

    def _sample_forever(self) -> None:
        read = self._read_rss
        assert read is not None
        while not self._stop.wait(self.interval_s):
            # Read the generation before the RSS: if a new window starts in between, the
            # sample belongs to the old test and record_sample drops it.
            generation = self._generation
            self.record_sample(generation, read())
            self.samples_taken += 1


def _cgroup_lines(proc_cgroup: Path) -> list[str]:
    try:
        return proc_cgroup.read_text().splitlines()
    except OSError:
        return []


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def cgroup_peak_mib(
    root: Path = Path("/sys/fs/cgroup"), proc_cgroup: Path = Path("/proc/self/cgroup")
) -> float | None:
    """The job's peak memory from its cgroup (v2 `memory.peak`, v1 `memory.max_usage_in_bytes`).

    Only the cgroup named in /proc/self/cgroup counts; a path whose directory is not visible
    here gives None rather than the (host-wide) root's numbers.
    """
    for line in _cgroup_lines(proc_cgroup):
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        rel = path.lstrip("/")
        if hierarchy == "0" and controllers == "":
            candidate = root / rel / "memory.peak"
        elif "memory" in controllers.split(","):
            candidate = root / "memory" / rel / "memory.max_usage_in_bytes"
        else:
            continue
        value = _read_int(candidate)
        if value is not None and value > 0:
            return value / MIB
    return None


def total_memory_mib() -> float | None:
    """Physical memory of the machine in MiB."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / MIB
    except (ValueError, OSError, AttributeError):
        pass
    try:
        import psutil
    except ImportError:
        return None
    return float(psutil.virtual_memory().total) / MIB
