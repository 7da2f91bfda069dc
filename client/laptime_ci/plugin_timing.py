"""CPU time, process age and per-file collection time for the pytest plugin.

The job model needs more than wall seconds: CPU seconds say whether a slow test was
slow or starved, the interpreter's start-up and the collection of each file are costs a job
pays before its first test. Everything here is stdlib and costs a few system calls.

CPU is user + system time of this process plus its *reaped* children (`getrusage`
RUSAGE_SELF + RUSAGE_CHILDREN): a child's time is added to RUSAGE_CHILDREN only once it was
waited for, so a test that starts a process and leaves it running is not charged for it
(subprocess.run, multiprocessing pools that are joined, are).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

try:
    import resource
except ImportError:  # Windows
    resource = None  # type: ignore[assignment]


def cpu_seconds(*, children: bool = True) -> float:
    """User + system CPU seconds of this process (and its reaped children) so far."""
    if resource is None:
        times = os.times()
        total = times.user + times.system
        return total + (times.children_user + times.children_system if children else 0.0)
    own = resource.getrusage(resource.RUSAGE_SELF)
    total = own.ru_utime + own.ru_stime
    if children:
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
        total += reaped.ru_utime + reaped.ru_stime
    return float(total)


SCHEDSTAT = "/proc/thread-self/schedstat"


def run_queue_wait_s(path: str = SCHEDSTAT) -> float | None:
    """Seconds this thread has been runnable but waiting for a CPU since it started, or None.

    The second field of the kernel's schedstat (run-queue delay, ns, Linux 3.17+): the time
    a busy machine took from a test, which wall over CPU cannot tell from a test's own
    threads or I/O.
    """
    try:
        with open(path, "rb") as stat_file:
            return _wait_field(stat_file.read())
    except OSError:
        return None


def _wait_field(stat: bytes) -> float | None:
    try:
        return int(stat.split()[1]) / 1e9
    except (ValueError, IndexError):
        return None


class RunQueueClock:
    """`run_queue_wait_s` for the thread that runs the tests, read twice per test: the file
    stays open and is re-read in place (1 us instead of 7 for opening it each time). The
    open file names the thread that opened it, so another thread gets its own reading."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._thread: int | None = None

    def read(self) -> float | None:
        """Seconds the calling thread waited for a CPU so far (None where unknown)."""
        if self._thread is None:
            self._thread = threading.get_ident()
            try:
                self._fd = os.open(SCHEDSTAT, os.O_RDONLY)
            except OSError:
                self._fd = None
        if self._thread != threading.get_ident():
            return run_queue_wait_s()
        if self._fd is None:
            return None
        try:
            return _wait_field(os.pread(self._fd, 256, 0))
        except OSError:
            return None

    def close(self) -> None:
        """Close the file (a later read opens it again)."""
        if self._fd is not None:
            os.close(self._fd)
        self._fd = None
        self._thread = None


def elapsed(start: float | None, now: float | None) -> float | None:
    """`now - start` of a counter that may be unknown (None) at either end."""
    if start is None or now is None:
        return None
    return max(0.0, now - start)


def _proc_age_s(
    stat_path: str = "/proc/self/stat", uptime_path: str = "/proc/uptime"
) -> float | None:
    """Seconds since this process was created, from the kernel's clock-tick start time.

    Field 22 of /proc/self/stat is the start in ticks after boot and /proc/uptime the seconds
    since boot (1/100 s resolution); /proc/stat's `btime` is whole seconds, too coarse.
    """
    try:
        with open(stat_path, "rb") as stat_file:
            stat = stat_file.read()
        with open(uptime_path, "rb") as uptime_file:
            uptime = float(uptime_file.read().split()[0])
        # The command name (field 2) may hold spaces and parentheses: count after the last ")".
        fields = stat[stat.rindex(b")") + 2 :].split()
        started_ticks = int(fields[19])
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    age = uptime - started_ticks / ticks
    return age if age >= 0 else None


def process_age_s() -> float | None:
    """Seconds since this process was created: /proc on Linux, psutil elsewhere if present."""
    age = _proc_age_s()
    if age is not None:
        return age
    try:
        import psutil
    except ImportError:
        return None
    try:
        return max(0.0, time.time() - float(psutil.Process().create_time()))
    except Exception:  # the process table can refuse us; unknown is the honest answer
        return None


def _rounded(value: float | None, digits: int = 6) -> float | None:
    return round(value, digits) if value is not None else None


class CollectionTimer:
    """Times collection as a whole and per file, where the tests are collected.

    A file's time runs from `pytest_collectstart` to `pytest_collectreport` of its File node
    and of every collector below it (classes): the module import, its fixtures' parsing and
    the generation of its items. Conftest imports and directory walking are not any file's;
    they are in `collect_s`.
    """

    def __init__(self) -> None:
        self.startup_s: float | None = None
        self.collect_s: float | None = None
        self.collected_tests = 0
        self.by_file: dict[str, float] = {}
        self._started: float | None = None
        self._open: dict[str, tuple[str, float]] = {}
        self._files_open: set[str] = set()

    def start(self) -> None:
        """Collection begins: note the process's age and the time."""
        self.startup_s = process_age_s()
        self._started = time.perf_counter()

    def finish(self) -> None:
        """Collection (deselection included) is over."""
        if self._started is not None:
            self.collect_s = time.perf_counter() - self._started

    def collector_started(self, nodeid: str, file_nodeid: str | None) -> None:
        """A collector of `file_nodeid` (None: not inside a file) starts collecting.

        pytest 8+ collects a module's classes inside the module's own collection: only the
        outermost collector of a file is timed, so nothing is counted twice.
        """
        if file_nodeid is not None and file_nodeid not in self._files_open:
            self._files_open.add(file_nodeid)
            self._open[nodeid] = (file_nodeid, time.perf_counter())

    def collector_reported(self, nodeid: str) -> None:
        """The collector `nodeid` has collected: charge its file."""
        opened = self._open.pop(nodeid, None)
        if opened is not None:
            file_nodeid, started = opened
            self._files_open.discard(file_nodeid)
            spent = time.perf_counter() - started
            self.by_file[file_nodeid] = self.by_file.get(file_nodeid, 0.0) + spent

    def summary(self) -> dict[str, Any]:
        """The session keys this process measured (JSON-able, for xdist's workeroutput too)."""
        return {
            "startup_s": _rounded(self.startup_s, 3),
            "collect_s": _rounded(self.collect_s),
            "collected_tests": self.collected_tests if self.collect_s is not None else None,
            "collected_files": len(self.by_file) if self.collect_s is not None else None,
            "collect_by_file": {k: round(v, 6) for k, v in self.by_file.items()}
            if self.collect_s is not None
            else None,
        }


def merge_worker_collection(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """The session's collection keys from every xdist worker's own collection.

    Workers collect the whole suite in parallel and the job waits for the slowest, so each
    figure is the largest over the workers (per file too). Startup stays the controller's.
    """
    known = [s for s in summaries if s.get("collect_s") is not None]
    if not known:
        return {}
    by_file: dict[str, float] = {}
    for summary in known:
        for name, seconds in (summary.get("collect_by_file") or {}).items():
            by_file[name] = max(by_file.get(name, 0.0), float(seconds))

    return {
        "collect_s": largest_of(known, "collect_s"),
        "collected_tests": largest_of(known, "collected_tests"),
        "collected_files": largest_of(known, "collected_files"),
        "collect_by_file": by_file,
    }


def largest_of(summaries: list[dict[str, Any]], key: str) -> Any:
    """The largest known `key` over xdist workers' summaries (the job waited for the slowest
    and held the most), None where none knows it."""
    values = [s[key] for s in summaries if isinstance(s.get(key), (int, float))]
    return max(values) if values else None


def nodeid_base(path: str, nodeid: str) -> str | None:
    """The directory a test's nodeid is relative to: its file's path minus the nodeid's file
    part (`/site/pkg` for `/site/pkg/tests/test_x.py` named `tests/test_x.py`); None when the
    nodeid does not end the path (a plugin's own item)."""
    file = nodeid.split("::", 1)[0].replace("\\", "/")
    full = path.replace("\\", "/")
    if not file or not full.endswith("/" + file):
        return None
    return full[: -len(file) - 1] or "/"
