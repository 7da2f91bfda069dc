"""Peak RSS: the window logic with scripted readings, then real allocations in real runs."""

from __future__ import annotations

import json
import mmap
import threading
from pathlib import Path

import pytest

from laptime_ci.plugin_memory import (
    MIB,
    KernelHighWaterMark,
    KernelPeakRssMonitor,
    PeakRssMonitor,
    SampledPeakRssMonitor,
    cgroup_peak_mib,
)


def _kernel_supported() -> bool:
    mark = KernelHighWaterMark.open()
    if mark is None:
        return False
    mark.close()
    return True


KERNEL = _kernel_supported()
needs_kernel = pytest.mark.skipif(
    not KERNEL, reason="no resettable RSS high-water mark (not Linux >= 4.0, or refused)"
)


class Readings:
    """Scripted RSS and ru_maxrss values, as the OS would report them."""

    def __init__(self) -> None:
        self.rss: float | None = 100.0
        self.max_rss: float | None = 100.0

    def read_rss(self) -> float | None:
        return self.rss

    def read_max_rss(self) -> float | None:
        return self.max_rss


def monitor_for(readings: Readings) -> SampledPeakRssMonitor:
    return SampledPeakRssMonitor(
        interval_s=0, read_rss_mib=readings.read_rss, read_max_rss_mib=readings.read_max_rss
    )


def test_window_starts_at_current_rss_and_takes_the_final_reading():
    readings = Readings()
    monitor = monitor_for(readings)
    monitor.begin_window()
    assert monitor.window_peak_mib() == 100.0
    readings.rss = 130.0
    assert monitor.window_peak_mib() == 130.0
    readings.rss = 90.0  # freed: the peak stays
    assert monitor.window_peak_mib() == 130.0


def test_a_stale_sample_never_reaches_the_next_window():
    readings = Readings()
    monitor = monitor_for(readings)
    first = monitor.begin_window()
    # The sampler read 600 MiB during the first test but only records it after the next
    # test's window began: the generation no longer matches, so it is dropped.
    second = monitor.begin_window()
    assert second == first + 1
    assert monitor.record_sample(first, 600.0) is False
    assert monitor.window_peak_mib() == 100.0
    assert monitor.record_sample(second, 150.0) is True
    assert monitor.window_peak_mib() == 150.0


def test_high_water_mark_counts_only_when_it_grew_in_the_window():
    readings = Readings()
    readings.max_rss = 500.0  # an earlier test's high-water mark
    monitor = monitor_for(readings)
    monitor.begin_window()
    readings.rss = 120.0
    assert monitor.window_peak_mib() == 120.0  # 500 is older than this window
    readings.max_rss = 520.0  # a spike between samples set a new high during this window
    assert monitor.window_peak_mib() == 520.0
    monitor.begin_window()
    assert monitor.window_peak_mib() == 120.0


def test_without_any_reading_the_peak_is_unknown():
    readings = Readings()
    readings.rss = readings.max_rss = None
    monitor = monitor_for(readings)
    monitor.begin_window()
    assert monitor.window_peak_mib() is None


def test_sampling_thread_catches_memory_freed_before_the_window_ends():
    readings = Readings()
    seen = threading.Event()

    def read() -> float | None:
        if readings.rss == 300.0:
            seen.set()
        return readings.rss

    monitor = SampledPeakRssMonitor(
        interval_s=0.001, read_rss_mib=read, read_max_rss_mib=readings.read_max_rss
    )
    try:
        monitor.begin_window()
        readings.rss = 300.0
        assert seen.wait(10)
        start = monitor.samples_taken
        while monitor.samples_taken < start + 2:  # the 300 MiB reading is folded in by now
            seen.wait(0.001)
        readings.rss = 110.0
        readings.max_rss = 100.0  # a high-water mark that did not move
        assert monitor.window_peak_mib() == 300.0
    finally:
        monitor.close()
    assert not [t for t in threading.enumerate() if t.name == "laptime-rss-sampler"]


class ScriptedMark:
    """A high-water mark that behaves like the kernel's: it follows the RSS up, resets down."""

    def __init__(self, rss: float = 100.0, peak: float | None = None) -> None:
        self.rss = rss
        self.peak = peak if peak is not None else rss
        self.initial_peak_mib: float | None = self.peak
        self.refuse = False
        self.closed = False

    def allocate(self, mib: float) -> None:
        self.rss += mib
        self.peak = max(self.peak, self.rss)

    def free(self, mib: float) -> None:
        self.rss -= mib

    def read_mib(self) -> float | None:
        return self.peak

    def reset(self) -> None:
        if self.refuse:
            raise PermissionError("clear_refs")
        self.peak = self.rss

    def close(self) -> None:
        self.closed = True


def test_high_water_mark_window_is_exact_and_a_spike_does_not_leak():
    mark = ScriptedMark()
    monitor = KernelPeakRssMonitor(mark)
    monitor.begin_window()
    mark.allocate(200)
    mark.free(200)  # freed before anyone looked: the kernel's mark still has it
    assert monitor.window_peak_mib() == 300.0
    monitor.begin_window()  # the next test starts at the current RSS again
    assert monitor.window_peak_mib() == 100.0
    mark.allocate(50)
    mark.free(50)  # below the 300 MiB reached earlier, and still seen
    assert monitor.window_peak_mib() == 150.0


def test_high_water_mark_keeps_the_process_peak_across_resets():
    mark = ScriptedMark(rss=100.0, peak=400.0)  # collection peaked at 400 before the probe
    monitor = KernelPeakRssMonitor(mark)
    monitor.begin_window()
    mark.allocate(150)
    mark.free(150)
    assert monitor.window_peak_mib() == 250.0
    monitor.begin_window()
    assert monitor.process_peak_mib() == 400.0
    mark.initial_peak_mib = None
    other = KernelPeakRssMonitor(mark)
    mark.allocate(500)  # between the probe and the first test (collection)
    mark.free(500)
    other.begin_window()  # reads the mark before the reset forgets it
    assert other.window_peak_mib() == 100.0
    assert other.process_peak_mib() == 600.0


def test_a_refused_reset_gives_an_unknown_peak_not_an_inherited_one():
    mark = ScriptedMark()
    monitor = KernelPeakRssMonitor(mark)
    monitor.begin_window()
    mark.allocate(200)
    mark.free(200)
    assert monitor.window_peak_mib() == 300.0
    mark.refuse = True
    monitor.begin_window()
    assert monitor.window_peak_mib() is None
    monitor.close()
    assert mark.closed


def test_the_method_is_chosen_at_the_first_window():
    opened: list[ScriptedMark] = []

    def open_mark() -> ScriptedMark:
        opened.append(ScriptedMark())
        return opened[-1]

    monitor = PeakRssMonitor(interval_s=0, open_high_water_mark=open_mark)
    assert (monitor.method, opened) == (None, [])  # the xdist controller never probes
    monitor.begin_window()
    assert (monitor.method, len(opened)) == ("hwm-reset", 1)
    monitor.close()
    assert opened[0].closed

    refused = PeakRssMonitor(interval_s=0, open_high_water_mark=lambda: None)
    refused.begin_window()
    assert refused.method == "endpoints"  # the fallback, without a thread at interval 0
    assert refused.window_peak_mib() is not None

    forced = PeakRssMonitor(interval_s=0.05, method="sampling", open_high_water_mark=open_mark)
    try:
        forced.begin_window()
        assert forced.method == "sampling"
        assert len(opened) == 1
    finally:
        forced.close()
    with pytest.raises(ValueError, match="unknown peak-RSS method"):
        PeakRssMonitor(method="psutil")


def test_a_reset_that_is_accepted_but_ignored_is_not_trusted(tmp_path: Path):
    # A regular file takes the write and changes nothing, like a sandbox that ignores it.
    fake = tmp_path / "clear_refs"
    fake.write_bytes(b"")
    assert KernelHighWaterMark.open(clear_refs_path=str(fake)) is None
    assert KernelHighWaterMark.open(status_path=str(tmp_path / "missing")) is None


def _spike(mib: int) -> None:
    """Touch `mib` MiB of fresh anonymous memory and give it back at once."""
    block = mmap.mmap(-1, mib * MIB)
    for offset in range(0, mib * MIB, mmap.PAGESIZE):
        block[offset] = 1
    block.close()


@needs_kernel
def test_kernel_high_water_mark_measures_real_spikes():
    mark = KernelHighWaterMark.open()
    assert mark is not None
    monitor = KernelPeakRssMonitor(mark)
    try:
        monitor.begin_window()
        base = monitor.window_peak_mib()
        assert base is not None
        monitor.begin_window()
        _spike(120)
        first = monitor.window_peak_mib()
        monitor.begin_window()
        after = monitor.window_peak_mib()
        monitor.begin_window()
        _spike(80)  # below the 120 MiB spike's high-water mark
        second = monitor.window_peak_mib()
        process = monitor.process_peak_mib()
    finally:
        monitor.close()
    assert first is not None
    assert after is not None
    assert second is not None
    assert first - base == pytest.approx(120, abs=4)
    assert after - base < 4  # the spike did not leak into the next window
    assert second - base == pytest.approx(80, abs=4)
    assert process is not None
    assert process >= first


@needs_kernel
def test_ru_maxrss_stands_in_for_the_mark_only_above_its_exec_floor():
    import resource

    def ru_maxrss_kib() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    # A floor far above this process, as after an exec from a much bigger parent: ru_maxrss
    # would report the floor for every test, so the mark must come from /proc/self/status.
    floor_kib = 64 * 1024 * 1024
    floored = KernelHighWaterMark.open(read_max_rss_kib=lambda: max(floor_kib, ru_maxrss_kib()))
    plain = KernelHighWaterMark.open()
    assert floored is not None
    assert plain is not None
    try:
        for mark in (floored, plain):
            mark.reset()
            _spike(60)
            reading = mark.read_mib()
            assert reading is not None
            assert reading == pytest.approx(mark.read_status_mib(), abs=1)
            assert reading < floor_kib / 1024
    finally:
        floored.close()
        plain.close()


@pytest.mark.parametrize(
    ("proc", "files", "expected"),
    [
        ("0::/ci/job\n", {"ci/job/memory.peak": "1048576000\n"}, 1000.0),
        ("0::/\n", {"memory.peak": "524288000\n"}, 500.0),
        (
            "4:memory:/docker/abc\n0::/\n",
            {"memory/docker/abc/memory.max_usage_in_bytes": "209715200"},
            200.0,
        ),
        ("4:memory:/elsewhere\n", {"memory/memory.max_usage_in_bytes": "999"}, None),
        ("0::/ci/job\n", {}, None),
    ],
    ids=["v2", "v2-namespaced-root", "v1", "v1-not-visible", "absent"],
)
def test_cgroup_peak(tmp_path, proc, files, expected):
    root = tmp_path / "cgroup"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (tmp_path / "cgroup.txt").write_text(proc)
    assert cgroup_peak_mib(root, tmp_path / "cgroup.txt") == expected


MEMORY_SUITE = """
import time

MIB = 1024 * 1024


def touched(mib):
    block = bytearray(mib * MIB)
    block[::4096] = b"\\x01" * len(range(0, len(block), 4096))
    return block


def test_0_baseline():
    pass


def test_1_spike_freed_at_once():
    # A new high-water mark for the process, freed before any sample could see it.
    block = touched(200)
    del block


def test_2_after_spike():
    pass


def test_3_below_the_high_water_mark(request):
    # 150 MiB stays under the 200 MiB of test 1. The kernel's mark was reset when this test
    # began, so it sees even a spike freed at once; the fallback's ru_maxrss cannot, so for
    # the sampling thread the block is held until two samples were taken.
    monitor = request.config.pluginmanager.get_plugin("laptime-writer").monitor
    block = touched(150)
    if monitor.method == "sampling":
        start = monitor.samples_taken
        deadline = time.monotonic() + 20
        while monitor.samples_taken < start + 2 and time.monotonic() < deadline:
            time.sleep(0.001)
    del block


def test_4_after():
    pass
"""


@pytest.mark.parametrize(
    ("option", "method"),
    [
        pytest.param("auto", "hwm-reset", marks=needs_kernel, id="hwm-reset"),
        pytest.param("sampling", "sampling", id="sampling-fallback"),
    ],
)
def test_peak_rss_of_a_known_allocation(clean_pytester, option, method):
    clean_pytester.makepyfile(test_memory=MEMORY_SUITE)
    result = clean_pytester.runpytest_subprocess(
        "--laptime-report=m.json", f"--laptime-rss-method={option}", "-p", "no:xdist"
    )
    result.assert_outcomes(passed=5)
    document = json.loads((clean_pytester.path / "m.json").read_text())
    assert document["session"]["test_peak_rss_method"] == method
    peak = {t["function"][5:]: t["peak_rss_mib"] for t in document["tests"]}
    base = peak["0_baseline"]
    assert peak["1_spike_freed_at_once"] - base == pytest.approx(200, abs=8)
    assert peak["3_below_the_high_water_mark"] - base == pytest.approx(150, abs=8)
    # Neither allocation leaks into the following test's peak.
    assert peak["2_after_spike"] - base < 8
    assert peak["4_after"] - base < 8
    # The resets forget ru_maxrss; the session's peak must still include test 1's spike.
    if document["session"]["peak_rss_source"] == "process-tree":
        assert document["session"]["peak_rss_mib"] >= peak["1_spike_freed_at_once"]


@needs_kernel
def test_session_peak_survives_the_per_test_resets(clean_pytester, monkeypatch):
    # Without a cgroup the session's peak is the process's own, which the resets of the
    # kernel's mark (and with it ru_maxrss) would otherwise forget.
    monkeypatch.setattr("laptime_ci.plugin.cgroup_peak_mib", lambda: None)
    clean_pytester.makepyfile(test_memory=MEMORY_SUITE)
    clean_pytester.inline_run("--laptime-report=m.json", "-p", "no:xdist").assertoutcome(passed=5)
    document = json.loads((clean_pytester.path / "m.json").read_text())
    session = document["session"]
    spike = next(t for t in document["tests"] if t["function"] == "test_1_spike_freed_at_once")
    assert (session["peak_rss_source"], session["test_peak_rss_method"]) == (
        "process-tree",
        "hwm-reset",
    )
    assert session["peak_rss_mib"] >= spike["peak_rss_mib"]
