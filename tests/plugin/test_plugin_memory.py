"""Peak RSS: the window logic with scripted readings, then a real 200 MiB allocation."""

from __future__ import annotations

import json
import threading

import pytest

from ingest.plugin_memory import PeakRssMonitor, cgroup_peak_mib


class Readings:
    """Scripted RSS and ru_maxrss values, as the OS would report them."""

    def __init__(self) -> None:
        self.rss: float | None = 100.0
        self.max_rss: float | None = 100.0

    def read_rss(self) -> float | None:
        return self.rss

    def read_max_rss(self) -> float | None:
        return self.max_rss


def monitor_for(readings: Readings) -> PeakRssMonitor:
    return PeakRssMonitor(
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

    monitor = PeakRssMonitor(
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
    # A new high-water mark, freed before any sample: ru_maxrss must see it.
    block = touched(200)
    del block


def test_2_after_spike():
    pass


def test_3_held_below_the_high_water_mark(request):
    # 150 MiB stays under the 200 MiB high-water mark: only the sampling thread can see it.
    monitor = request.config.pluginmanager.get_plugin("laptime-writer").monitor
    block = touched(150)
    start = monitor.samples_taken
    deadline = time.monotonic() + 20
    while monitor.samples_taken < start + 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    del block


def test_4_after_held():
    pass
"""


def test_peak_rss_of_a_known_allocation(clean_pytester):
    clean_pytester.makepyfile(test_memory=MEMORY_SUITE)
    result = clean_pytester.runpytest_subprocess("--laptime-report=m.json", "-p", "no:xdist")
    result.assert_outcomes(passed=5)
    tests = json.loads((clean_pytester.path / "m.json").read_text())["tests"]
    peak = {t["function"][5:]: t["peak_rss_mib"] for t in tests}
    base = peak["0_baseline"]
    assert peak["1_spike_freed_at_once"] - base == pytest.approx(200, abs=8)
    assert peak["3_held_below_the_high_water_mark"] - base == pytest.approx(150, abs=8)
    # Neither allocation leaks into the following test's peak.
    assert peak["2_after_spike"] - base < 8
    assert peak["4_after_held"] - base < 8
