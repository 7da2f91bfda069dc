"""What an outside reader of the pytest process's peak (like /usr/bin/time) sees, per method.

Resetting the kernel's high-water mark per test (`hwm-reset`) lowers the process's `ru_maxrss`, so
its parent reads less than the largest test's peak (the job model's measurements found /usr/bin/time
below the plugin's own largest test). With `sampling` nothing is reset and the outside reading
covers every test. The reading is the pytest process's own rusage from wait4, taken by a small
launcher process, so neither this big test process nor anything else it reaped inflates it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from laptime_ci.plugin_memory import KernelHighWaterMark

_MARK = KernelHighWaterMark.open()
HAS_MARK = _MARK is not None
if _MARK is not None:
    _MARK.close()

SUITE = """
def test_big():
    block = b"x" * (96 << 20)  # touched: 96 MiB resident, freed (munmap) when the test ends
    assert block[-1:] == b"x"


def test_small_after():
    assert sum(range(1000))
"""

# Runs pytest and prints its ru_maxrss (KiB on Linux) as its parent, /usr/bin/time style.
LAUNCHER = """
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-m", "pytest", *sys.argv[1:]],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
_pid, status, usage = os.wait4(child.pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def outside_peak_mib(path: Path, method: str) -> tuple[float, dict[str, object]]:
    """(the pytest process's peak as its parent reads it, the plugin's report)."""
    args = [
        "-p",
        "no:xdist",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "--laptime-report=m.json",
        f"--laptime-test-memory={method}",
    ]
    out = subprocess.run(
        [sys.executable, "-c", LAUNCHER, *args],
        cwd=path,
        env={k: v for k, v in os.environ.items() if not k.startswith("LAPTIME_")},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert out[0] == "0", out
    report = json.loads((path / "m.json").read_text())
    return int(out[1]) / 1024, report


def largest_test_peak(report: dict[str, object]) -> float:
    tests = report["tests"]
    assert isinstance(tests, list)
    return max(float(t["peak_rss_mib"]) for t in tests)


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "test_mem.py").write_text(SUITE)
    return tmp_path


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss in KiB, /proc")
def test_sampling_keeps_the_peak_visible_outside(suite: Path) -> None:
    outside, report = outside_peak_mib(suite, "sampling")
    assert report["session"]["test_peak_rss_method"] == "sampling"  # type: ignore[index]
    assert largest_test_peak(report) > 96
    # Sampled readings are the current RSS (statm), which can exceed the kernel's ru_maxrss
    # by a page table's worth (0.3 MiB seen): 1 MiB of slack, far below the 96 MiB at stake.
    assert outside >= largest_test_peak(report) - 1.0


@pytest.mark.skipif(not HAS_MARK, reason="no resettable high-water mark")
def test_hwm_reset_hides_the_peak_from_outside_and_says_so(suite: Path) -> None:
    outside, report = outside_peak_mib(suite, "hwm-reset")
    session = report["session"]
    assert session["test_peak_rss_method"] == "hwm-reset"  # type: ignore[index]
    # The plugin's own session peak still covers the big test...
    assert session["peak_rss_mib"] >= largest_test_peak(report) > 96  # type: ignore[index]
    # ...but the parent's reading lost it: the reset after test_big lowered the mark.
    assert outside < largest_test_peak(report) - 48


def test_off_measures_no_test_and_keeps_the_process_peak(suite: Path) -> None:
    outside, report = outside_peak_mib(suite, "off")
    session = report["session"]
    assert session["test_peak_rss_method"] == "off"  # type: ignore[index]
    assert all(t["peak_rss_mib"] is None for t in report["tests"])  # type: ignore[union-attr]
    assert session["peak_rss_mib"] > 96  # type: ignore[index]
    assert outside >= 96


def test_the_method_comes_from_the_option_its_old_name_or_the_ini(
    clean_pytester: pytest.Pytester,
) -> None:
    from laptime_ci.plugin import per_test_memory_method

    assert per_test_memory_method(clean_pytester.parseconfig()) == "auto"
    assert per_test_memory_method(clean_pytester.parseconfig("--laptime-rss-method=sampling")) == (
        "sampling"
    )
    clean_pytester.makeini("[pytest]\nlaptime_test_memory = off\n")
    assert per_test_memory_method(clean_pytester.parseconfig()) == "off"
    config = clean_pytester.parseconfig("--laptime-test-memory=hwm-reset")
    assert per_test_memory_method(config) == "hwm-reset"
    clean_pytester.makeini("[pytest]\nlaptime_test_memory = everything\n")
    with pytest.raises(pytest.UsageError, match="expected one of auto, hwm-reset"):
        per_test_memory_method(clean_pytester.parseconfig())
