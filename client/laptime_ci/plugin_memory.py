"""Peak RSS measurement for the pytest plugin: per-test windows and the process's peak memory.

Two methods (docs/plugin.md has the long form):

- `hwm-reset` (Linux >= 4.0, the default where it works): the kernel keeps the process's exact
  RSS high-water mark (`VmHWM` in /proc/self/status); writing "5" to /proc/self/clear_refs
  resets it to the current RSS. A window resets it when it opens and reads it when it ends:
  an exact per-test peak, no thread, one pwrite and (usually) one getrusage per test.
- the fallback (macOS, containers that refuse the write, or when forced): a daemon thread
  samples the current RSS every few milliseconds and each window also takes the `ru_maxrss`
  high-water mark when it grew during the window. Every window carries a generation number;
  a sample read for an older generation is dropped, so a spike of one test can never leak
  into the next test's peak.

Stdlib only at import time: the plugin imports this module from pytest's entry point.

Why one module (just over 500 lines): both measuring methods serve one window interface behind
`PeakRssMonitor`, which picks one at start; apart they would always be imported together.
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Optional, Protocol

MIB = 1024 * 1024
DEFAULT_INTERVAL_S = 0.005

RssReader = Callable[[], Optional[float]]


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


class SampledPeakRssMonitor:
    """The fallback: per-test peaks from a sampling thread and `ru_maxrss` growth."""

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
    def method(self) -> str:
        """`sampling` with the thread, `endpoints` without (interval 0 or no RSS reader)."""
        return "sampling" if self.interval_s > 0 and self._read_rss is not None else "endpoints"

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

    def process_peak_mib(self) -> float | None:
        """The process's RSS high-water mark: nothing resets it on this path."""
        return self._read_max_rss()

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


STATUS_PATH = "/proc/self/status"
CLEAR_REFS_PATH = "/proc/self/clear_refs"
# "5" resets the RSS high-water mark (Linux >= 4.0, Documentation/filesystems/proc.rst).
_RESET_HIGH_WATER_MARK = b"5"
PROBE_MIB = 2
# auto = hwm-reset where the kernel allows it, else sampling; hwm-reset asks for it by name
# (and still falls back where it is refused); off measures no test, only the process.
METHOD_CHOICES = ("auto", "hwm-reset", "sampling", "off")


class HighWaterMark(Protocol):
    """A resettable RSS high-water mark of this process."""

    initial_peak_mib: float | None  # the mark before the first reset: the process's peak so far

    def read_mib(self) -> float | None: ...

    def reset(self) -> None: ...

    def close(self) -> None: ...


def _ru_maxrss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss if resource is not None else 0


class KernelHighWaterMark:
    """The kernel's RSS high-water mark of this process (Linux `VmHWM`), which it can reset.

    `ru_maxrss` reads the same mark at a quarter of the cost of /proc/self/status, but the
    kernel reports the larger of the mark and a floor fixed when the process was exec'd (the
    RSS of the image it replaced, e.g. a big parent that forked it, like pytester or the xdist
    controller). The floor never changes afterwards, and `ru_maxrss` read right after a reset
    is an upper bound of it; any reading above that bound is the mark itself. Readings at or
    below it come from /proc/self/status.
    """

    def __init__(
        self,
        status_fd: int,
        clear_refs_fd: int,
        *,
        read_max_rss_kib: Callable[[], int] = _ru_maxrss_kib,
    ) -> None:
        self._status_fd = status_fd
        self._clear_refs_fd = clear_refs_fd
        self._read_max_rss_kib = read_max_rss_kib
        self._floor_bound_kib = float("inf")  # until the first reset: always /proc/self/status
        self.initial_peak_mib: float | None = None

    @classmethod
    def open(
        cls,
        status_path: str = STATUS_PATH,
        clear_refs_path: str = CLEAR_REFS_PATH,
        *,
        read_max_rss_kib: Callable[[], int] = _ru_maxrss_kib,
    ) -> KernelHighWaterMark | None:
        """Open both files and check that a reset really lowers the mark; None where not."""
        try:
            status_fd = os.open(status_path, os.O_RDONLY)
        except OSError:
            return None
        try:
            clear_refs_fd = os.open(clear_refs_path, os.O_WRONLY)
        except OSError:  # no such file (not Linux, gVisor) or not ours to write
            os.close(status_fd)
            return None
        mark = cls(status_fd, clear_refs_fd, read_max_rss_kib=read_max_rss_kib)
        mark.initial_peak_mib = mark.read_mib()
        if mark.initial_peak_mib is not None and mark.lowers_on_reset():
            return mark
        mark.close()
        return None

    def read_mib(self) -> float | None:
        """The high-water mark in MiB since the last reset (or since the process started)."""
        max_rss_kib = self._read_max_rss_kib()
        if max_rss_kib > self._floor_bound_kib:
            return max_rss_kib / 1024
        return self.read_status_mib()

    def read_status_mib(self) -> float | None:
        """`VmHWM` from /proc/self/status, in MiB."""
        try:
            data = os.pread(self._status_fd, 4096, 0)
        except OSError:
            return None
        start = data.find(b"VmHWM:")
        if start < 0:
            return None
        try:
            return int(data[start + 6 : data.index(b"kB", start)]) / 1024
        except ValueError:
            return None

    def reset(self) -> None:
        """Lower the mark to the current RSS; raises OSError if the kernel refuses."""
        os.pwrite(self._clear_refs_fd, _RESET_HIGH_WATER_MARK, 0)

    def lowers_on_reset(self, probe_mib: int = PROBE_MIB) -> bool:
        """Raise the mark above the current RSS, reset it, and check that it came down.

        A write can be accepted and ignored (an old kernel, a sandbox), so only a mark that
        drops counts. The block is an anonymous mmap, not a malloc'd buffer: freeing a large
        malloc block would move glibc's mmap threshold and change how the tests' own memory
        is given back to the system.
        """
        block = mmap.mmap(-1, probe_mib * MIB)
        try:
            for offset in range(0, probe_mib * MIB, mmap.PAGESIZE):
                block[offset] = 1
        finally:
            block.close()
        raised = self.read_status_mib()
        try:
            self.reset()
        except OSError:
            return False
        self._floor_bound_kib = self._read_max_rss_kib()
        lowered = self.read_status_mib()
        return raised is not None and lowered is not None and raised - lowered >= probe_mib / 2

    def close(self) -> None:
        """Close both descriptors (idempotent)."""
        for fd in (self._status_fd, self._clear_refs_fd):
            if fd >= 0:
                os.close(fd)
        self._status_fd = self._clear_refs_fd = -1


class KernelPeakRssMonitor:
    """Exact per-test peaks: the kernel's high-water mark, reset when each window opens.

    The reset is process-wide, which is right because a process runs one test at a time
    (xdist workers are processes of their own). It also resets `ru_maxrss`, so the process's
    own peak is kept here: the largest reading of the mark between resets.
    """

    method = "hwm-reset"
    samples_taken = 0  # no sampling thread; the attribute keeps the monitors interchangeable

    def __init__(self, mark: HighWaterMark) -> None:
        self._mark = mark
        self._generation = 0
        self._process_peak = mark.initial_peak_mib
        # The mark since the last reset has not been read: the next reset would lose it.
        self._unread = True
        self._window_valid = False

    @property
    def generation(self) -> int:
        """Number of the current window (0 before the first)."""
        return self._generation

    def begin_window(self) -> int:
        """Reset the mark to the current RSS; returns the new window's generation."""
        if self._unread:
            # Collection before the first test, or a window that never got its final
            # reading: still part of the process's peak, which the reset is about to forget.
            self._fold(self._mark.read_mib())
        try:
            self._mark.reset()
            self._window_valid = True
        except OSError:  # unknown beats a peak inherited from an earlier test
            self._window_valid = False
        self._unread = True
        self._generation += 1
        return self._generation

    def window_peak_mib(self) -> float | None:
        """Peak RSS of the current window so far: the mark since the window opened."""
        peak = self._mark.read_mib()
        self._unread = False
        self._fold(peak)
        return peak if self._window_valid else None

    def process_peak_mib(self) -> float | None:
        """The process's peak RSS: collection and every window, up to now."""
        self._fold(self._mark.read_mib())
        return self._process_peak

    def close(self) -> None:
        """Close the descriptors."""
        self._mark.close()

    def _fold(self, value: float | None) -> None:
        if value is not None and (self._process_peak is None or value > self._process_peak):
            self._process_peak = value


class ProcessOnlyRssMonitor:
    """`off`: no per-test peak, no thread, no reset; the process's own `ru_maxrss` stays whole."""

    method = "off"
    samples_taken = 0

    def __init__(self) -> None:
        self._generation = 0

    def begin_window(self) -> int:
        """Count the window; nothing is measured."""
        self._generation += 1
        return self._generation

    def window_peak_mib(self) -> float | None:
        """Unknown: per-test measurement is off."""
        return None

    def process_peak_mib(self) -> float | None:
        """The process's RSS high-water mark, never reset on this path."""
        return max_rss_mib()

    def close(self) -> None:
        """Nothing to release."""


class PeakRssMonitor:
    """Tracks the peak RSS reached inside consecutive windows (one window per test).

    The method is chosen when the first window opens, so a process that never runs a test
    (the xdist controller) never probes: `hwm-reset` where the kernel offers it and `method`
    is "auto", else the sampling fallback.
    """

    def __init__(
        self,
        *,
        interval_s: float = DEFAULT_INTERVAL_S,
        method: str = "auto",
        open_high_water_mark: Callable[[], HighWaterMark | None] = KernelHighWaterMark.open,
    ) -> None:
        if method not in METHOD_CHOICES:
            raise ValueError(
                f"unknown peak-RSS method {method!r}, expected one of {METHOD_CHOICES}"
            )
        self.interval_s = interval_s
        self._requested = method
        self._open_high_water_mark = open_high_water_mark
        self._impl: KernelPeakRssMonitor | SampledPeakRssMonitor | ProcessOnlyRssMonitor | None
        self._impl = None

    @property
    def method(self) -> str | None:
        """`hwm-reset`, `sampling`, `endpoints` or `off`; None until the first window opened."""
        return self._impl.method if self._impl is not None else None

    @property
    def samples_taken(self) -> int:
        """Readings taken by the fallback's sampling thread so far."""
        return self._impl.samples_taken if self._impl is not None else 0

    def begin_window(self) -> int:
        """Start a new window at the current RSS; returns its generation."""
        impl = self._impl if self._impl is not None else self._choose()
        return impl.begin_window()

    def window_peak_mib(self) -> float | None:
        """Peak RSS of the current window so far, including a reading taken now."""
        impl = self._impl if self._impl is not None else self._choose()
        return impl.window_peak_mib()

    def process_peak_mib(self) -> float | None:
        """This process's peak RSS in MiB (`ru_maxrss` until a window opened)."""
        return self._impl.process_peak_mib() if self._impl is not None else max_rss_mib()

    def close(self) -> None:
        """Stop the sampling thread or close the kernel files."""
        if self._impl is not None:
            self._impl.close()

    def _choose(self) -> KernelPeakRssMonitor | SampledPeakRssMonitor | ProcessOnlyRssMonitor:
        if self._requested == "off":
            self._impl = ProcessOnlyRssMonitor()
            return self._impl
        wants_mark = self._requested in ("auto", "hwm-reset")
        mark = self._open_high_water_mark() if wants_mark else None
        impl: KernelPeakRssMonitor | SampledPeakRssMonitor
        if mark is not None:
            impl = KernelPeakRssMonitor(mark)
        else:
            impl = SampledPeakRssMonitor(interval_s=self.interval_s)
        self._impl = impl
        return impl


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
