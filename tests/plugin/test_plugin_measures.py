"""What the job model needs: per-test CPU and order, start-up, collection per file.

One real pytest subprocess on a small suite whose costs are known: a busy loop burns its wall
in CPU, a sleep burns none, a child process burns CPU the test must be charged for, and one
module spends 0.3 s at import.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from analysis.ci.pytest_selection import Invocation

BURN = """
import time


def burn(seconds):
    # CPU seconds, not wall: on a loaded machine the loop then still burns exactly this much.
    started = time.process_time()
    while time.process_time() - started < seconds:
        pass
"""

SUITE = {
    "burner": BURN,
    "test_work": """
import subprocess
import sys
import time

import pytest

from burner import burn

CHILD = "from burner import burn; burn(0.3)"


@pytest.fixture(scope="module")
def module_resource():
    burn(0.2)
    return 1


def test_busy(module_resource):
    burn(0.3)


def test_sleep(module_resource):
    time.sleep(0.3)


def test_child():
    subprocess.run([sys.executable, "-c", CHILD], check=True)
""",
    "test_slow_import": """
from burner import burn

burn(0.3)  # a heavy import: the file's collection pays it


def test_after_import():
    pass
""",
    "test_light": """
class TestLight:
    def test_one(self):
        pass

    def test_two(self):
        pass
""",
}


def run_suite(pytester: pytest.Pytester) -> dict[str, Any]:
    pytester.makepyfile(**SUITE)
    result = pytester.runpytest_subprocess("--laptime-report=r.json", "-p", "no:xdist")
    result.assert_outcomes(passed=6)
    document: dict[str, Any] = json.loads((pytester.path / "r.json").read_text())
    return document


def _tests(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["nodeid"].split("::")[-1]: t for t in document["tests"]}


def test_measures_of_a_real_run(clean_pytester: pytest.Pytester) -> None:
    """One run (about 3 s), every measure checked against what the suite is known to cost."""
    report = run_suite(clean_pytester)
    tests = _tests(report)
    busy, sleep, child = tests["test_busy"], tests["test_sleep"], tests["test_child"]

    # CPU follows work, not wall: a busy loop's 0.3 CPU seconds are all counted and no more
    # than its wall (one thread; on an idle machine the two are equal), a sleep costs none,
    # and the child's 0.3 s of burning is the test's although another process spent it.
    assert 0.29 <= busy["cpu_s"] <= busy["duration_s"] + 0.02
    assert busy["cpu_s"] / busy["duration_s"] > 0.5 or busy["duration_s"] > 0.6  # load
    assert sleep["cpu_s"] < 0.2 * sleep["duration_s"]
    assert child["cpu_s"] > 0.29
    assert report["session"]["cpu_s"] >= sum(t["cpu_s"] for t in tests.values())

    # The module fixture's setup is the first test's setup, which seq tells apart.
    assert busy["setup_s"] >= 0.2 > sleep["setup_s"]
    assert busy["seq"] < sleep["seq"]

    # seq is the execution order: files in collection order, tests in file order.
    seqs = [t["seq"] for t in report["tests"]]
    assert sorted(seqs) == list(range(len(seqs)))
    ordered = [t["nodeid"] for t in sorted(report["tests"], key=lambda t: t["seq"])]
    assert ordered == [
        "test_light.py::TestLight::test_one",
        "test_light.py::TestLight::test_two",
        "test_slow_import.py::test_after_import",
        "test_work.py::test_busy",
        "test_work.py::test_sleep",
        "test_work.py::test_child",
    ]

    # Start-up and collection, per file: the slow import is the largest.
    session = report["session"]
    by_file = session["collect_by_file"]
    assert set(by_file) == {"test_light.py", "test_slow_import.py", "test_work.py"}
    assert max(by_file, key=by_file.get) == "test_slow_import.py"
    assert by_file["test_slow_import.py"] >= 0.25
    assert sum(by_file.values()) <= session["collect_s"] <= session["wall_s"]
    assert (session["collected_tests"], session["collected_files"]) == (6, 3)
    assert session["startup_s"] > 0
    assert session["invocation"] == "paths"
    assert session["rootdir"] == str(clean_pytester.path)
    assert session["job_wall_s"] is None  # no job start in this environment


@pytest.mark.parametrize("distribution", [["-p", "no:xdist"], ["-n", "1"]], ids=["serial", "xdist"])
def test_pyargs_rootdir_is_where_the_nodeids_start(
    distribution: list[str],
    clean_pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Under `--pyargs` of a package outside the rootdir (installed), pytest names files
    relative to the package it found, not to its rootdir: the report's rootdir must be that
    base, so a plan can turn the nodeids back into their modules (plans that run)."""
    site = tmp_path_factory.mktemp("site")  # outside the rootdir, as an installed package is
    tests_dir = site / "pkgx" / "tests"
    tests_dir.mkdir(parents=True)
    (site / "pkgx" / "__init__.py").write_text("")
    (tests_dir / "__init__.py").write_text("")
    (tests_dir / "test_mod.py").write_text("def test_a():\n    pass\n")
    work = clean_pytester.path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("PYTHONPATH", str(site))
    result = clean_pytester.runpytest_subprocess(
        "--laptime-report=r.json", *distribution, "--pyargs", "pkgx"
    )
    result.assert_outcomes(passed=1)
    report = json.loads((work / "r.json").read_text())
    (test,) = report["tests"]
    session = report["session"]
    assert session["invocation"] == "pyargs"
    file = test["nodeid"].split("::")[0]
    assert (Path(session["rootdir"]) / file).resolve() == (tests_dir / "test_mod.py").resolve()
    assert Invocation("pyargs", session["rootdir"]).module_of(file) == "pkgx.tests.test_mod"


HEAP_SUITE = """
import gc

KEPT = []


def test_grow():
    # 200,000 tracked lists the process keeps: every later heap walk visits them.
    KEPT.extend([i] for i in range(200_000))


def test_scan():
    gc.collect()
    assert sum(1 for obj in gc.get_objects() if obj is KEPT) == 1
    gc.get_referrers(KEPT)


def test_plain():
    assert len(KEPT) == 200_000
"""


@pytest.mark.parametrize("distribution", [["-p", "no:xdist"], ["-n", "1"]], ids=["serial", "xdist"])
def test_heap_bound_work_is_measured(
    clean_pytester: pytest.Pytester, distribution: list[str]
) -> None:
    """Seconds in gc.collect, heap scans and the heap a scan saw, per test; the session's heap
    before and after collection and after the tests (heap-bound time follows the heap)."""
    clean_pytester.makepyfile(test_heap=HEAP_SUITE)
    result = clean_pytester.runpytest_subprocess("--laptime-report=r.json", *distribution)
    result.assert_outcomes(passed=3)
    report = json.loads((clean_pytester.path / "r.json").read_text())
    tests = _tests(report)
    grow, scan, plain = tests["test_grow"], tests["test_scan"], tests["test_plain"]

    assert 0 < scan["gc_s"] <= scan["duration_s"]
    assert scan["heap_scans"] == 2  # get_objects and get_referrers; collect is timed apart
    assert scan["heap_objects"] >= 200_000  # it ran after test_grow: the kept lists count
    for other in (grow, plain):
        assert (other["gc_s"], other["heap_scans"], other["heap_objects"]) == (0.0, 0, None)

    session = report["session"]
    start, collected, end = (
        session["heap_objects_start"],
        session["heap_objects_collected"],
        session["heap_objects_end"],
    )
    assert 0 < start <= collected
    assert collected + 190_000 <= end  # pytest frees a few of its own along the way
    assert collected < scan["heap_objects"] <= end + 1_000


def test_heap_meter_puts_gc_back() -> None:
    """The wrappers count and time, answer what gc answers, and are gone after uninstall."""
    import gc

    from laptime_ci.plugin_heap import HeapMeter, tracked_objects

    originals = (gc.collect, gc.get_objects, gc.get_referrers, gc.get_referents)
    meter = HeapMeter()
    meter.install()
    try:
        assert gc.collect is not originals[0]
        meter.begin_test()
        kept = [[i] for i in range(1_000)]
        assert isinstance(gc.collect(), int)
        seen = gc.get_objects()
        assert any(obj is kept for obj in seen)
        gc.get_objects(generation=0)  # a partial scan: counted, but not the heap's size
        gc_s, scans, objects = meter.reading()
        assert gc_s > 0
        assert (scans, objects) == (2, len(seen))
        assert abs(tracked_objects() - len(seen)) < 1_000
    finally:
        meter.uninstall()
    assert (gc.collect, gc.get_objects, gc.get_referrers, gc.get_referents) == originals


CONTENDED_SUITE = """
import os
import subprocess
import sys

from burner import burn

HOG = "import os; os.sched_setaffinity(0, {os.sched_getaffinity(0).pop()})\\nwhile True: pass"


def test_contended():
    # This thread and a busy child share one CPU: it runs about half the time, waits the rest.
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    hog = subprocess.Popen([sys.executable, "-c", HOG])
    try:
        burn(0.3)
    finally:
        hog.kill()
        hog.wait()
"""


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs CPU affinity (Linux)")
def test_run_queue_wait_is_the_time_a_busy_machine_took(clean_pytester: pytest.Pytester) -> None:
    """cpu_wait_s: the seconds the test's thread was runnable but had no CPU (schedstat), the part
    of its wall a quiet machine would not have taken (history recorded under load)."""
    clean_pytester.makepyfile(burner=BURN, test_contended=CONTENDED_SUITE)
    result = clean_pytester.runpytest_subprocess("--laptime-report=r.json", "-p", "no:xdist")
    result.assert_outcomes(passed=1)
    report = json.loads((clean_pytester.path / "r.json").read_text())
    (test,) = report["tests"]
    # Sharing one CPU with a busy loop: about as long waiting as burning.
    assert test["cpu_wait_s"] >= 0.1
    assert test["cpu_wait_s"] <= test["duration_s"]
    # A single thread's wall is its CPU plus its wait (plus the child's start, a little I/O).
    assert test["cpu_s"] + test["cpu_wait_s"] >= 0.8 * test["duration_s"]
    assert report["session"]["cpu_wait_s"] >= test["cpu_wait_s"] - 0.01
