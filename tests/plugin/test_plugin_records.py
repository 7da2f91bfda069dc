"""What the plugin records per test, checked against pytest's own reports of the same run."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import pytest

from laptime_ci.plugin_memory import KernelHighWaterMark
from laptime_ci.plugin_report import EXCLUDED_MARKERS

_MARK = KernelHighWaterMark.open()
EXPECTED_METHOD = "hwm-reset" if _MARK is not None else "sampling"
if _MARK is not None:
    _MARK.close()

SUITE = """
import pytest

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore")]

class Blob:
    pass

@pytest.fixture
def resource():
    yield 1

@pytest.mark.gpu
class TestC:
    @pytest.mark.parametrize("name,n", [("a", 1), ("b", 2)])
    def test_y(self, name, n, resource):
        assert n

    class TestInner:
        def test_deep(self):
            pass

@pytest.mark.parametrize("obj", [Blob()])
@pytest.mark.parametrize("size", [3.5], ids=["big"])
@pytest.mark.usefixtures("resource")
def test_objects(obj, size):
    pass

@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert 0

@pytest.mark.xfail(reason="fixed?")
def test_xpass():
    pass

@pytest.mark.skip(reason="not here")
def test_skip():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("fixture boom")

def test_error(broken):
    pass

@pytest.fixture
def bad_teardown():
    yield
    raise ValueError("teardown boom")

def test_teardown_error(bad_teardown):
    pass

def test_fail():
    assert 1 == 2, "one is not two"
"""


def run_suite(pytester: pytest.Pytester, *args: str) -> tuple[dict[str, Any], Any]:
    pytester.makepyfile(test_suite=SUITE)
    reprec = pytester.inline_run("--laptime-report=out/report.json", *args)
    document = json.loads((pytester.path / "out" / "report.json").read_text())
    return document, reprec


def by_nodeid(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["nodeid"]: t for t in document["tests"]}


def test_identity_params_and_markers(clean_pytester):
    document, _ = run_suite(clean_pytester)
    tests = by_nodeid(document)
    assert len(tests) == 10
    y = tests["test_suite.py::TestC::test_y[a-1]"]
    assert (y["file"], y["classname"], y["function"], y["params"]) == (
        "test_suite.py",
        "TestC",
        "test_y",
        "a-1",
    )
    assert y["param_values"] == {"name": "'a'", "n": "1"}
    assert y["markers"] == ["gpu", "slow"]  # class + module marks; filterwarnings dropped
    deep = tests["test_suite.py::TestC::TestInner::test_deep"]
    assert deep["classname"] == "TestC::TestInner"
    assert deep["params"] is None
    assert deep["param_values"] is None
    objects = tests["test_suite.py::test_objects[big-obj0]"]
    # An object's repr may hold an address: it is named like pytest's automatic id.
    assert objects["param_values"] == {"size": "3.5", "obj": "obj0"}
    assert objects["markers"] == ["slow"]  # usefixtures and parametrize are not user markers
    assert objects["classname"] is None
    assert {"parametrize", "usefixtures", "filterwarnings", "skip", "xfail"} <= EXCLUDED_MARKERS


def test_outcomes_xfail_and_messages(clean_pytester):
    document, reprec = run_suite(clean_pytester)
    tests = by_nodeid(document)
    got = {
        nodeid.split("::")[-1]: (t["outcome"], t["xfail"], t["message"])
        for nodeid, t in tests.items()
    }
    assert got["test_xfail"] == ("skipped", True, "known bug")
    assert got["test_xpass"] == ("passed", True, "fixed?")
    assert got["test_skip"] == ("skipped", False, "Skipped: not here")
    assert got["test_error"] == ("error", False, "RuntimeError: fixture boom")
    assert got["test_teardown_error"] == ("error", False, "ValueError: teardown boom")
    assert got["test_fail"][:2] == ("failed", False)
    assert got["test_fail"][2].startswith("AssertionError: one is not two")
    assert got["test_y[a-1]"] == ("passed", False, None)
    _passed, _skipped, failed = reprec.listoutcomes()
    assert len(failed) == 3  # fail, error in setup, error in teardown


def test_phases_are_pytests_own_durations(clean_pytester):
    document, reprec = run_suite(clean_pytester)
    tests = by_nodeid(document)
    phases: dict[str, dict[str, float]] = {}
    for report in reprec.getreports("pytest_runtest_logreport"):
        phases.setdefault(report.nodeid, {})[report.when] = report.duration
    assert set(phases) == set(tests)
    for nodeid, entry in tests.items():
        seen = phases[nodeid]
        for when in ("setup", "call", "teardown"):
            expected = round(seen[when], 6) if when in seen else None
            assert entry[f"{when}_s"] == expected, (nodeid, when)
        assert entry["duration_s"] == pytest.approx(sum(seen.values()), abs=1e-6)
        assert entry["attempts"] == 1
        assert entry["flaky"] is False
    # A skipped-at-setup test has no call phase at all: unknown, not zero.
    assert tests["test_suite.py::test_skip"]["call_s"] is None


def test_session_block(clean_pytester):
    document, _ = run_suite(clean_pytester)
    assert document["format"] == "laptime-json"
    assert document["version"] == 1
    session = document["session"]
    assert session["xdist_workers"] is None
    assert session["pytest"] == pytest.__version__
    assert session["cpu_count"] >= 1
    assert session["memory_total_mib"] > 0
    assert session["peak_rss_source"] == "process-tree"
    assert session["peak_rss_mib"] > 0
    assert session["test_peak_rss_method"] == EXPECTED_METHOD
    assert session["wall_s"] >= 0
    assert session["started_at"].endswith("+00:00")
    assert all(t["worker"] is None for t in document["tests"])
    assert all(t["peak_rss_mib"] > 0 for t in document["tests"])


def test_env_var_enables_the_report(clean_pytester, monkeypatch):
    clean_pytester.makepyfile(test_a="def test_a():\n    pass\n")
    monkeypatch.setenv("LAPTIME_REPORT", str(clean_pytester.path / "env.json"))
    clean_pytester.inline_run().assertoutcome(passed=1)
    assert [
        t["nodeid"] for t in json.loads((clean_pytester.path / "env.json").read_text())["tests"]
    ] == ["test_a.py::test_a"]


def test_inert_unless_enabled(clean_pytester):
    clean_pytester.makepyfile("def test_a():\n    pass\n")
    config = clean_pytester.parseconfigure()
    assert config.pluginmanager.get_plugin("laptime-writer") is None
    names = {impl.plugin_name for impl in config.hook.pytest_runtest_makereport.get_hookimpls()}
    assert not any("laptime" in name for name in names)
    before = set(clean_pytester.path.iterdir())
    result = clean_pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert set(clean_pytester.path.iterdir()) == before
    assert "laptime:" not in result.stdout.str()
    assert not [t for t in threading.enumerate() if t.name == "laptime-rss-sampler"]
    enabled = clean_pytester.parseconfigure("--laptime-report=x.json")
    assert enabled.pluginmanager.get_plugin("laptime-writer") is not None


def test_unwritable_report_path_warns_without_failing(clean_pytester):
    clean_pytester.makepyfile("def test_a():\n    pass\n")
    (clean_pytester.path / "blocker").write_text("a file, not a directory")
    result = clean_pytester.runpytest("--laptime-report=blocker/report.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["laptime: cannot write blocker/report.json*"])


RERUN_SUITE = """
from pathlib import Path

def test_flaky(tmp_path_factory):
    marker = Path(__file__).with_name("attempted")
    if not marker.exists():
        marker.write_text("1")
        raise AssertionError("first attempt fails")

def test_always():
    assert 0, "always"

def test_fine():
    pass
"""


# Logs every phase report where pytest's own terminal sees it (the controller under xdist).
PHASE_LOG_CONFTEST = """
WORKER = []

def pytest_configure(config):
    WORKER.append(hasattr(config, "workerinput"))

def pytest_runtest_logreport(report):
    if WORKER[0]:
        return
    with open("phases.log", "a") as log:
        log.write(f"{report.nodeid} {report.when} {report.duration!r}\\n")
"""


@pytest.mark.parametrize("xdist", [False, True], ids=["serial", "xdist"])
def test_reruns_count_attempts_and_flaky(clean_pytester, xdist):
    clean_pytester.makepyfile(test_rerun=RERUN_SUITE)
    clean_pytester.makeconftest(PHASE_LOG_CONFTEST)
    args = ["--reruns", "2", "--laptime-report=r.json"]
    if xdist:
        args += ["-n", "2"]
    result = clean_pytester.runpytest_subprocess(*args)
    assert result.parseoutcomes() == {"passed": 2, "failed": 1, "rerun": 3}
    tests = by_nodeid(json.loads((clean_pytester.path / "r.json").read_text()))
    flaky, always, fine = (
        tests[f"test_rerun.py::{n}"] for n in ("test_flaky", "test_always", "test_fine")
    )
    assert (flaky["outcome"], flaky["attempts"], flaky["flaky"]) == ("passed", 2, True)
    assert flaky["message"] is None  # the final attempt passed
    assert (always["outcome"], always["attempts"], always["flaky"]) == ("failed", 3, False)
    assert always["message"].startswith("AssertionError: always")
    assert (fine["outcome"], fine["attempts"], fine["flaky"]) == ("passed", 1, False)
    logged: dict[str, list[tuple[str, float]]] = {}
    for line in (clean_pytester.path / "phases.log").read_text().splitlines():
        nodeid, when, seconds = line.split(" ")
        logged.setdefault(nodeid, []).append((when, float(seconds)))
    for entry in (flaky, always, fine):
        phases = logged[entry["nodeid"]]
        # Every attempt's seconds count; the phases shown are the last attempt's.
        assert entry["duration_s"] == pytest.approx(sum(s for _, s in phases), abs=1e-5)
        last = dict(phases[-3:])
        assert (entry["setup_s"], entry["call_s"], entry["teardown_s"]) == pytest.approx(
            (last["setup"], last["call"], last["teardown"]), abs=1e-5
        )
        assert entry["peak_rss_mib"] > 0
    assert flaky["duration_s"] > flaky["setup_s"] + flaky["call_s"] + flaky["teardown_s"]


def test_xdist_merges_every_workers_records(clean_pytester):
    clean_pytester.makepyfile(test_suite=SUITE)
    clean_pytester.makepyfile(
        **{
            f"test_more{i}": "\n".join(f"def test_{j}():\n    pass\n" for j in range(15))
            for i in range(4)
        }
    )
    result = clean_pytester.runpytest_subprocess("-n", "2", "--laptime-report=merged.json")
    result.assert_outcomes(passed=65, failed=1, errors=2, skipped=1, xfailed=1, xpassed=1)
    files = sorted(p.name for p in clean_pytester.path.glob("*.json"))
    assert files == ["merged.json"]
    document = json.loads((clean_pytester.path / "merged.json").read_text())
    assert document["session"]["xdist_workers"] == 2
    tests = by_nodeid(document)
    assert len(tests) == 70 == len(document["tests"])
    assert {t["worker"] for t in tests.values()} == {"gw0", "gw1"}
    # Worker-side details survive the trip to the controller.
    y = tests["test_suite.py::TestC::test_y[b-2]"]
    assert y["param_values"] == {"name": "'b'", "n": "2"}
    assert y["markers"] == ["gpu", "slow"]
    assert tests["test_suite.py::test_xfail"]["xfail"] is True
    assert tests["test_suite.py::test_error"]["message"] == "RuntimeError: fixture boom"
    assert all(t["peak_rss_mib"] > 0 and t["setup_s"] is not None for t in tests.values())
    session = document["session"]
    assert session["peak_rss_mib"] > 0
    assert session["test_peak_rss_method"] == EXPECTED_METHOD  # reported by the workers
    # What the workers measured: each worker's own order, CPU, and their collection.
    for worker in ("gw0", "gw1"):
        seqs = sorted(t["seq"] for t in tests.values() if t["worker"] == worker)
        assert seqs == list(range(len(seqs)))
    assert all(t["cpu_s"] >= 0 for t in tests.values())
    assert session["cpu_s"] > 0
    assert (session["collected_tests"], session["collected_files"]) == (70, 5)
    assert set(session["collect_by_file"]) == {"test_suite.py"} | {
        f"test_more{i}.py" for i in range(4)
    }
    assert session["collect_s"] > 0
    assert session["startup_s"] > 0


def test_report_parses_back_with_the_same_numbers(clean_pytester):
    from ingest.parsers.laptime_json import parse_laptime_json

    document, _ = run_suite(clean_pytester)
    data = (clean_pytester.path / "out" / "report.json").read_bytes()
    parsed = parse_laptime_json(data, filename="report.json")
    frame = parsed.results.set_index("nodeid")
    assert len(frame) == len(document["tests"])
    for entry in document["tests"]:
        row = frame.loc[entry["nodeid"]]
        for column in ("duration_s", "setup_s", "call_s", "teardown_s", "peak_rss_mib"):
            if entry[column] is None:
                assert row[column] != row[column]  # NaN
            else:
                assert row[column] == pytest.approx(entry[column])
        assert (row["outcome"], row["attempts"], bool(row["flaky"])) == (
            entry["outcome"],
            entry["attempts"],
            entry["flaky"],
        )
        assert list(row["markers"]) == entry["markers"]
        assert row["param_values"] == entry["param_values"]
    assert parsed.session.xdist_workers is None
    assert parsed.session.wall_s == pytest.approx(document["session"]["wall_s"])
    assert parsed.session.peak_rss_mib == pytest.approx(document["session"]["peak_rss_mib"])


def test_importing_the_plugin_pulls_in_nothing_heavy():
    code = (
        "import sys, laptime_ci.plugin; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'pandas', 'numpy', 'httpx', 'app', 'psutil', 'sqlalchemy', 'fastapi'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
