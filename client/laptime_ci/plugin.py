"""laptime's pytest plugin: per-test timings, parameters, markers and peak RSS as laptime JSON.

Registered through the `pytest11` entry point and inert unless `--laptime-report=PATH`,
`LAPTIME_REPORT`, `--laptime-upload` or `--laptime-shard` is given: until then it adds
command-line options and nothing else (no per-test hooks, no thread). Once active it fixes
glibc's malloc thresholds (plugin_malloc.py; `--laptime-malloc=dynamic` does not). Standard
library only; the uploader and the shard client are imported when used.

Under pytest-xdist each worker attaches its per-test record to the teardown report (a plain
JSON-able attribute, which xdist ships to the controller with the report itself) and its own
peak RSS and measuring method to `workeroutput`; only the controller writes the one merged file.

Why one module (over 500 lines): pytest finds the hooks on this registered module, and the
hooks, the item recorder and the report writer share per-item state; the report's assembly
(plugin_report.py), memory measurement (plugin_memory.py), upload and sharding live apart.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from laptime_ci.plugin_heap import (
    HeapCensus,
    HeapMeter,
    HeapReading,
    merge_worker_census,
    tracked_objects,
)
from laptime_ci.plugin_malloc import MALLOC_CHOICES, PINNED, pin_allocator, release_environment
from laptime_ci.plugin_memory import (
    DEFAULT_INTERVAL_S,
    METHOD_CHOICES,
    PeakRssMonitor,
    cgroup_peak_mib,
    children_max_rss_mib,
    total_memory_mib,
)
from laptime_ci.plugin_report import (
    REPORT_ATTR,
    ItemState,
    ParentInfo,
    describe_item,
    describe_parent,
    fold_report,
    result_entry,
)
from laptime_ci.plugin_timing import (
    CollectionTimer,
    RunQueueClock,
    cpu_seconds,
    elapsed,
    merge_worker_collection,
    nodeid_base,
    run_queue_wait_s,
)
from laptime_ci.quarantine_plugin import quarantine_option, register_quarantine
from laptime_ci.run_handoff import HANDOFF_ENV, hand_off

FORMAT = "laptime-json"
VERSION = 1
WORKEROUTPUT_KEY = "laptime_max_rss_mib"
SHARD_PLUGIN_NAME = "laptime-shard"
QUEUE_PLUGIN_NAME = "laptime-queue"
WORKEROUTPUT_METHOD_KEY = "laptime_rss_method"
WORKEROUTPUT_TIMING_KEY = "laptime_timing"
# The allocator state the tests ran in (plugin_malloc), the report's session.malloc.
MALLOC_STATE = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Declare the plugin's options; they do nothing until one of them is used."""
    group = parser.getgroup("laptime", "laptime test-duration report")
    group.addoption(
        "--laptime-report",
        dest="laptime_report",
        metavar="PATH",
        default=None,
        help="write a laptime JSON report to PATH (env LAPTIME_REPORT).",
    )
    group.addoption(
        "--laptime-upload",
        dest="laptime_upload",
        action="store_true",
        default=False,
        help="upload the report to LAPTIME_URL with LAPTIME_TOKEN at session end.",
    )
    group.addoption(
        "--laptime-shard",
        dest="laptime_shard",
        metavar="I/N",
        default=None,
        help="run only shard I of N, planned by the server (LAPTIME_URL, LAPTIME_PROJECT, "
        "LAPTIME_READ_TOKEN; every test when it gives no plan), without a server by cached "
        "durations, else by nodeid hash.",
    )
    group.addoption(
        "--laptime-queue",
        dest="laptime_queue",
        metavar="I/N",
        default=None,
        help="queue mode: node I of N pulls batches from the pipeline's queue on the server "
        "(LAPTIME_URL, LAPTIME_TOKEN, LAPTIME_PROJECT, LAPTIME_PIPELINE or the CI's run id); "
        "the static shard when the server cannot be reached.",
    )
    group.addoption(
        "--laptime-budget",
        dest="laptime_budget",
        metavar="SECONDS",
        type=float,
        default=None,
        help="queue mode: the job's wall budget counted from the job's start "
        "(LAPTIME_JOB_STARTED_AT or the CI's), setup included; no test predicted not to fit "
        "is started (env LAPTIME_BUDGET_S, GitLab's CI_JOB_TIMEOUT).",
    )
    group.addoption(
        "--laptime-quarantine",
        dest="laptime_quarantine",
        action="store_true",
        default=False,
        help="fetch the project's quarantine at session start (LAPTIME_URL, LAPTIME_PROJECT, "
        "LAPTIME_READ_TOKEN or LAPTIME_TOKEN; env LAPTIME_QUARANTINE=1): failures of "
        "quarantined tests are reported as xfail and recorded as quarantined failures.",
    )
    group.addoption(
        "--laptime-shard-cache",
        dest="laptime_shard_cache",
        metavar="PATH",
        default=None,
        help="durations cache the offline shard split reads, written by a full run (1/1) or "
        "laptime-ci shard-fold, never by a shard (env LAPTIME_SHARD_CACHE, default "
        ".laptime/durations.json).",
    )
    group.addoption(
        "--laptime-rss-interval-ms",
        dest="laptime_rss_interval_ms",
        type=float,
        default=DEFAULT_INTERVAL_S * 1000,
        help="sampling interval in ms of the peak-RSS fallback (0: no sampling thread).",
    )
    group.addoption(
        "--laptime-test-memory",
        dest="laptime_test_memory",
        choices=METHOD_CHOICES,
        default=None,
        help="per-test peak RSS: auto (default: hwm-reset where the kernel allows it, else "
        "sampling), hwm-reset (exact, but hides the process peak from /usr/bin/time and other "
        "outside readers), sampling (a thread; outside readers see the true peak) or off "
        "(ini: laptime_test_memory).",
    )
    group.addoption(
        "--laptime-rss-method",
        dest="laptime_rss_method",
        choices=METHOD_CHOICES,
        default=None,
        help="the former name of --laptime-test-memory.",
    )
    group.addoption(
        "--laptime-malloc",
        dest="laptime_malloc",
        choices=MALLOC_CHOICES,
        default=None,
        help="glibc malloc while measuring: pinned (default: fixed thresholds, so a test costs "
        "the same in a split job as in the whole run) or dynamic (glibc's default) "
        "(ini: laptime_malloc).",
    )
    parser.addini(
        "laptime_malloc",
        "glibc malloc while measuring: pinned or dynamic (see --laptime-malloc)",
        default=PINNED,
    )
    parser.addini(
        "laptime_test_memory",
        "per-test peak RSS method: auto, hwm-reset, sampling or off (see --laptime-test-memory)",
        default="auto",
    )


def report_path_option(config: pytest.Config) -> str | None:
    """The report path from `--laptime-report` or `LAPTIME_REPORT`, None when neither is set."""
    value = config.getoption("laptime_report") or os.environ.get("LAPTIME_REPORT")
    return str(value) if value else None


def pytest_configure(config: pytest.Config) -> None:
    """Register the recording plugins, only when the report or the upload is asked for."""
    shard = config.getoption("laptime_shard")
    queue = config.getoption("laptime_queue")
    path = report_path_option(config)
    upload = bool(config.getoption("laptime_upload"))
    if shard or queue or path is not None or upload:
        # Before any test module is imported: the history and every planned job alike.
        config.stash[MALLOC_STATE] = pin_allocator(malloc_mode(config))
    if quarantine_option(config):
        register_quarantine(config)
    if shard:
        from laptime_ci.shard_plugin import ShardSelector

        config.pluginmanager.register(ShardSelector(config, str(shard)), SHARD_PLUGIN_NAME)
    if queue and getattr(config, "workerinput", None) is None:
        from laptime_ci.queue_plugin import QueueRunner

        config.pluginmanager.register(QueueRunner(config, str(queue)), QUEUE_PLUGIN_NAME)
    if path is None and not upload:
        return
    interval_s = max(0.0, float(config.getoption("laptime_rss_interval_ms"))) / 1000
    method = per_test_memory_method(config)
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        recorder = ItemRecorder(
            interval_s=interval_s, method=method, worker=str(workerinput["workerid"])
        )
        config.pluginmanager.register(recorder, "laptime-recorder")
        return
    config.pluginmanager.register(
        ReportWriter(config, path=path, upload=upload, interval_s=interval_s, method=method),
        "laptime-writer",
    )


def pytest_unconfigure(config: pytest.Config) -> None:
    """The session is over: its allocator thresholds leave the environment."""
    if config.stash.get(MALLOC_STATE, None) == PINNED:
        release_environment()


def malloc_mode(config: pytest.Config) -> str:
    """The allocator mode: the option, the ini setting, "pinned"."""
    mode = str(config.getoption("laptime_malloc") or config.getini("laptime_malloc")).strip()
    if mode not in MALLOC_CHOICES:
        raise pytest.UsageError(
            f"laptime_malloc = {mode!r}: expected one of {', '.join(MALLOC_CHOICES)}"
        )
    return mode


def per_test_memory_method(config: pytest.Config) -> str:
    """The per-test memory method: the option, its former name, the ini setting, "auto"."""
    chosen = (
        config.getoption("laptime_test_memory")
        or config.getoption("laptime_rss_method")
        or config.getini("laptime_test_memory")
        or "auto"
    )
    method = str(chosen).strip()
    if method not in METHOD_CHOICES:
        raise pytest.UsageError(
            f"laptime_test_memory = {method!r}: expected one of {', '.join(METHOD_CHOICES)}"
        )
    return method


class ItemRecorder:
    """Runs where the tests run: measures each test's peak RSS and describes the item."""

    def __init__(self, *, interval_s: float, method: str, worker: str | None) -> None:
        self.monitor = PeakRssMonitor(interval_s=interval_s, method=method)
        self.worker = worker
        self._item: pytest.Item | None = None
        self._parents: dict[str, ParentInfo] = {}
        self.collection = CollectionTimer()
        self._cpu_start = 0.0
        self._wait_start: float | None = None
        self.run_queue = RunQueueClock()
        self._seq = -1
        self.heap = HeapMeter()
        self.heap.install()
        self.census = HeapCensus()
        # The directory the nodeids are relative to (differs from the rootdir under --pyargs
        # of an installed package): a plan replays them from there.
        self._nodeid_base: str | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection(self, session: pytest.Session) -> None:
        """Collection starts: the process's start-up ends here."""
        self.collection.start()
        self.census.start = tracked_objects()

    def pytest_collectstart(self, collector: pytest.Collector) -> None:
        """A collector starts: time it for its file (modules and the classes inside)."""
        node: pytest.Collector | pytest.Item | None = collector
        while node is not None and not isinstance(node, pytest.File):
            node = node.parent  # (getparent() cannot be given the abstract File class)
        self.collection.collector_started(collector.nodeid, node.nodeid if node else None)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A collector is done: charge its file."""
        self.collection.collector_reported(report.nodeid)

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        """Count every collected test, deselected ones too (they were imported and built)."""
        self.collection.collected_tests += 1
        if self._nodeid_base is None:
            path = getattr(item, "path", None)  # pytest >= 7; older ones only have fspath
            path = path if path is not None else item.fspath
            self._nodeid_base = nodeid_base(str(path), item.nodeid)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Collection and deselection are over."""
        self.collection.finish()
        self.census.collected = tracked_objects()

    def count_heap_at_end(self) -> None:
        """After the last test: the heap the tests left (only where tests were collected)."""
        if self.census.collected is not None and self.census.end is None:
            self.census.end = tracked_objects()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        """Open the test's memory and CPU window before its fixtures run (so a module's or
        class's fixtures count in its first test); a rerun keeps the window open."""
        if self._item is None or item.nodeid != self._item.nodeid:
            self.monitor.begin_window()
            self._seq += 1
            self._cpu_start = cpu_seconds()
            self._wait_start = self.run_queue.read()
            self.heap.begin_test()
        self._item = item

    def tests_cpu_s(self) -> float:
        """CPU seconds (process and reaped children) since the running test's window opened."""
        return max(0.0, cpu_seconds() - self._cpu_start)

    def tests_wait_s(self) -> float | None:
        """Seconds the running test's thread waited for a CPU since its window opened."""
        return elapsed(self._wait_start, self.run_queue.read())

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Attach the record to each attempt's teardown report, before xdist ships it."""
        if report.when == "teardown":
            self.attach_record(report)

    def attach_record(self, report: pytest.TestReport) -> None:
        """Put the running test's record (with its peak RSS so far) on its report."""
        item = self._item
        if item is None or item.nodeid != report.nodeid:
            return
        record = self.item_record(
            item,
            self.monitor.window_peak_mib(),
            cpu_s=self.tests_cpu_s(),
            seq=self._seq,
            heap=self.heap.reading(),
            cpu_wait_s=self.tests_wait_s(),
        )
        setattr(report, REPORT_ATTR, record)

    def item_record(
        self,
        item: pytest.Item,
        peak_rss_mib: float | None,
        *,
        cpu_s: float | None = None,
        seq: int | None = None,
        heap: HeapReading | None = None,
        cpu_wait_s: float | None = None,
    ) -> dict[str, Any]:
        """The worker-side record of a test: its description, peak RSS, CPU, order, worker,
        and its heap-bound work (seconds in gc.collect, heap scans, the heap a scan saw)."""
        parent = item.parent
        key = parent.nodeid if parent is not None else ""
        parent_info = self._parents.get(key)
        if parent_info is None:
            parent_info = self._parents[key] = describe_parent(parent)
        record = describe_item(item, parent_info)
        record["peak_rss_mib"] = round(peak_rss_mib, 3) if peak_rss_mib is not None else None
        record["worker"] = self.worker
        record["cpu_s"] = round(cpu_s, 6) if cpu_s is not None else None
        record["seq"] = seq
        record["cpu_wait_s"] = round(cpu_wait_s, 6) if cpu_wait_s is not None else None
        gc_s, scans, objects = heap if heap is not None else (None, None, None)
        record["gc_s"] = round(gc_s, 6) if gc_s is not None else None
        record["heap_scans"] = scans
        record["heap_objects"] = objects
        return record

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Hand this worker's peaks, method, CPU and collection times to the controller."""
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            self.count_heap_at_end()
            workeroutput[WORKEROUTPUT_KEY] = self.monitor.process_peak_mib()
            workeroutput[WORKEROUTPUT_METHOD_KEY] = self.monitor.method
            # The worker's whole life (it lives inside the controller's session).
            timing = {
                **self.collection.summary(),
                **self.census.summary(),
                "cpu_s": round(cpu_seconds(), 3),
                # The worker's whole life, like its CPU (its main thread runs the tests).
                "cpu_wait_s": run_queue_wait_s(),
                "nodeid_base": self._nodeid_base,
            }
            workeroutput[WORKEROUTPUT_TIMING_KEY] = timing

    def pytest_unconfigure(self) -> None:
        """Stop the sampling thread or close the kernel files; unwrap the gc functions."""
        self.monitor.close()
        self.heap.uninstall()
        self.run_queue.close()


def job_peak_memory(
    controller_max_rss_mib: float | None, worker_max_rss_mib: list[float]
) -> tuple[float | None, str | None]:
    """The peak memory of the test process tree (controller, xdist workers and the children
    they waited for), labelled `process-tree`; unknown (None, None) where the tree's is.

    The sum over controller and workers is an upper bound: their peaks may not coincide. The
    cgroup's peak is never used, not even as a fallback: v2 `memory.peak` is the maximum over
    the cgroup's whole lifetime and counts every process of the container (services, the
    job's setup steps, page cache): 996 MiB from an earlier pip install where the tests
    peaked at 281 MiB. The report keeps it apart as `cgroup_peak_mib`.
    """
    if controller_max_rss_mib is not None:
        children = worker_max_rss_mib
        if not children:
            child = children_max_rss_mib()
            children = [child] if child else []
        return round(controller_max_rss_mib + sum(children), 3), "process-tree"
    return None, None


def container_peak_mib() -> float | None:
    """The job's cgroup peak (every process of the container), for the report's own field."""
    cgroup = cgroup_peak_mib()
    return None if cgroup is None else round(cgroup, 3)


class ReportWriter(ItemRecorder):
    """Runs in the controlling process: folds every report and writes (and uploads) the file."""

    def __init__(
        self,
        config: pytest.Config,
        *,
        path: str | None,
        upload: bool,
        interval_s: float,
        method: str = "auto",
    ) -> None:
        super().__init__(interval_s=interval_s, method=method, worker=None)
        self.config = config
        self.path = Path(path) if path else None
        self.upload = upload
        self.tests: dict[str, ItemState] = {}
        self.workers: set[str] = set()
        self.worker_max_rss_mib: dict[str, float] = {}
        self.worker_rss_methods: set[str] = set()
        self.worker_timing: dict[str, dict[str, Any]] = {}
        self.session_cpu_start = (cpu_seconds(children=False), cpu_seconds())
        self.session_wait_start = run_queue_wait_s()
        self.started_at = datetime.now(timezone.utc)
        self.started_perf = time.perf_counter()
        self.notes: list[tuple[str, bool]] = []  # (line, is_warning) for the terminal summary
        self.distributed = False

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        """Note the start, and whether xdist runs the tests elsewhere."""
        self.started_at = datetime.now(timezone.utc)
        self.started_perf = time.perf_counter()
        self.session_cpu_start = (cpu_seconds(children=False), cpu_seconds())
        self.session_wait_start = run_queue_wait_s()
        self.distributed = session.config.pluginmanager.has_plugin("dsession")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        """Count xdist workers."""
        self.workers.add(str(node.workerinput["workerid"]))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Collect a finished worker's RSS high-water mark."""
        output = getattr(node, "workeroutput", None) or {}
        value = output.get(WORKEROUTPUT_KEY)
        if isinstance(value, (int, float)):
            self.worker_max_rss_mib[str(node.workerinput["workerid"])] = float(value)
        method = output.get(WORKEROUTPUT_METHOD_KEY)
        if isinstance(method, str):
            self.worker_rss_methods.add(method)
        timing = output.get(WORKEROUTPUT_TIMING_KEY)
        if isinstance(timing, dict):
            self.worker_timing[str(node.workerinput["workerid"])] = timing

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Fold one phase report into its test's state (measuring it first when run here)."""
        state = self.tests.get(report.nodeid)
        if state is None:
            state = self.tests[report.nodeid] = ItemState(report.nodeid)
        if report.when == "teardown" and not self.distributed:
            self.keep_item(state, report)
        fold_report(state, report)

    def keep_item(self, state: ItemState, report: pytest.TestReport) -> None:
        """Note the running test and its peak RSS so far (the highest of its attempts)."""
        item = self._item
        if item is None or item.nodeid != report.nodeid:
            return
        state.item = item
        state.cpu_s = self.tests_cpu_s()
        state.seq = self._seq
        state.heap = self.heap.reading()
        state.cpu_wait_s = self.tests_wait_s()
        peak = self.monitor.window_peak_mib()
        if peak is not None and (state.peak_rss_mib is None or peak > state.peak_rss_mib):
            state.peak_rss_mib = peak

    def build_report(self) -> dict[str, Any]:
        """The laptime JSON v1 document for the session so far."""
        peak, source = job_peak_memory(
            self.controller_peak_mib(), list(self.worker_max_rss_mib.values())
        )
        memory = total_memory_mib()
        session = {
            "started_at": self.started_at.isoformat(timespec="seconds"),
            "wall_s": round(time.perf_counter() - self.started_perf, 3),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "pytest": pytest.__version__,
            "cpu_count": os.cpu_count(),
            "memory_total_mib": round(memory, 1) if memory is not None else None,
            "xdist_workers": len(self.workers) if self.workers else None,
            "peak_rss_mib": peak,
            "peak_rss_source": source,
            # Labelled apart and never the sizing figure (see job_peak_memory).
            "cgroup_peak_mib": container_peak_mib(),
            "test_peak_rss_method": self.tests_peak_rss_method(),
            "hostname": socket.gethostname(),
            "malloc": self.config.stash.get(MALLOC_STATE, None),
            **self.session_measures(),
        }
        tests = []
        for state in self.tests.values():
            item = state.item
            record = (
                self.item_record(
                    item,
                    state.peak_rss_mib,
                    cpu_s=state.cpu_s,
                    seq=state.seq,
                    heap=state.heap,
                    cpu_wait_s=state.cpu_wait_s,
                )
                if item is not None
                else None
            )
            tests.append(result_entry(state, record))
        return {"format": FORMAT, "version": VERSION, "session": session, "tests": tests}

    def session_measures(self) -> dict[str, Any]:
        """CPU, start-up, collection, invocation and job wall of the session.

        `cpu_s` covers the same span as `wall_s`. Under xdist the controller adds its own CPU
        (without children: the workers are its children, reaped or not yet) to each worker's
        whole-life CPU, and the collection figures are the workers' (the controller does not
        collect); `startup_s` is the controller's. `cpu_wait_s` is the run-queue delay of the
        thread(s) running the tests: this process's main thread, or the sum of the workers'.
        """
        own_start, total_start = self.session_cpu_start
        measures: dict[str, Any] = {**self.collection.summary(), **self.census.summary()}
        if self.distributed:
            cpu = cpu_seconds(children=False) - own_start
            cpu += sum(float(t.get("cpu_s") or 0.0) for t in self.worker_timing.values())
            waits = [t.get("cpu_wait_s") for t in self.worker_timing.values()]
            known = [float(w) for w in waits if isinstance(w, (int, float))]
            wait: float | None = sum(known) if known and len(known) == len(waits) else None
            measures.update(merge_worker_collection(list(self.worker_timing.values())))
            measures.update(merge_worker_census(list(self.worker_timing.values())))
        else:
            cpu = cpu_seconds() - total_start
            wait = elapsed(self.session_wait_start, run_queue_wait_s())
        from laptime_ci.ci_env import job_wall_s

        return {
            "cpu_s": round(max(0.0, cpu), 3),
            "cpu_wait_s": round(wait, 3) if wait is not None else None,
            **measures,
            "invocation": "pyargs" if self.config.getoption("pyargs", False) else "paths",
            "rootdir": self._recorded_nodeid_base() or str(self.config.rootpath),
            "job_wall_s": job_wall_s(os.environ),
        }

    def _recorded_nodeid_base(self) -> str | None:
        """Where the nodeids start: this process's collection, else an xdist worker's (the
        controller collects nothing)."""
        bases = [t.get("nodeid_base") for t in self.worker_timing.values()]
        return self._nodeid_base or next((str(b) for b in bases if b), None)

    def controller_peak_mib(self) -> float | None:
        """This process's peak, never below a test it ran: the fallback's samples read the
        current RSS, which can exceed the `ru_maxrss` the process peak comes from by a page
        table's worth (0.3 MiB seen)."""
        peaks = [self.monitor.process_peak_mib()]
        peaks += [state.peak_rss_mib for state in self.tests.values() if state.item is not None]
        known = [peak for peak in peaks if peak is not None]
        return max(known) if known else None

    def tests_peak_rss_method(self) -> str | None:
        """How the tests' `peak_rss_mib` was measured: this process's or the workers' method."""
        if self.distributed:
            methods = sorted(self.worker_rss_methods)
        else:
            methods = [self.monitor.method] if self.monitor.method is not None else []
        if not methods:
            return None
        return methods[0] if len(methods) == 1 else "mixed"

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Write the report and upload it; problems become warnings, never a failed run."""
        self.count_heap_at_end()
        document = self.build_report()
        ended_at = time.time()  # the session's end, as its wall_s counts it
        data = json.dumps(document, separators=(",", ":")).encode()
        if self.path is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self.path.write_bytes(data)
                self.notes.append((f"wrote {self.path} ({len(document['tests'])} tests)", False))
            except OSError as exc:
                self.notes.append((f"cannot write {self.path}: {exc}", True))
        # A shard's or a queue node's labels and plan go with the report.
        manager = self.config.pluginmanager
        selector = manager.get_plugin(SHARD_PLUGIN_NAME) or manager.get_plugin(QUEUE_PLUGIN_NAME)
        labels = dict(getattr(selector, "labels", None) or {})
        plan_id = getattr(selector, "plan_id", None)
        handoff = os.environ.get(HANDOFF_ENV)
        if handoff:
            # `laptime-ci run` times the process's exit, adds it to the report and uploads.
            self.notes.append(
                hand_off(
                    Path(handoff),
                    document,
                    ended_at=ended_at,
                    path=self.path,
                    upload=self.upload,
                    labels=labels,
                    plan_id=plan_id,
                )
            )
        elif self.upload:
            from laptime_ci.report_upload import upload_document

            self.notes.append(
                upload_document(document, data, self.path, labels=labels, plan_id=plan_id)
            )
        if not self.config.pluginmanager.has_plugin("terminalreporter"):
            for line, _ in self.notes:
                print(f"laptime: {line}", file=sys.stderr)  # noqa: T201

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Show what was written and uploaded."""
        for line, warning in self.notes:
            terminalreporter.write_line(f"laptime: {line}", yellow=warning)
