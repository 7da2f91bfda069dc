"""The job model's keys in laptime JSON: read when valid; a bad value is dropped with a
warning and never costs the report; reports without them (old plugins, JUnit) read as unknown.
The heap measures (gc_s, heap_scans, heap_objects and the session's heap_objects_*) and the
run-queue wait (cpu_wait_s per test and per session) follow the same rules as cpu_s and seq,
and so does the session's allocator state (malloc: one of MALLOC_STATES, like invocation)."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest

from ingest.model import MEASURE_COLUMNS
from ingest.parsers.junit import parse_junit
from ingest.parsers.laptime_json import parse_laptime_json
from ingest.parsers.laptime_json_schema import MALLOC_STATES
from tests.parsers.test_laptime_json import SESSION, TEST, document


def parse(doc: dict[str, Any]) -> Any:
    return parse_laptime_json(json.dumps(doc).encode(), filename="r.json")


def test_valid_measures_are_read() -> None:
    report = parse(document())
    assert report.warnings == []
    session = report.session
    assert (session.cpu_s, session.startup_s, session.collect_s) == (20.25, 0.8, 1.5)
    assert (session.collected_tests, session.collected_files) == (120, 7)
    assert session.collect_by_file == {"tests/test_x.py": 0.75}
    assert (session.invocation, session.rootdir, session.job_wall_s) == (
        "paths",
        "/src/project",
        95.0,
    )
    row = report.results.iloc[0]
    assert (row["cpu_s"], row["seq"]) == (0.09, 4.0)
    assert (session.heap_objects_start, session.heap_objects_collected) == (41_000, 150_000)
    assert session.heap_objects_end == 420_000
    assert (row["gc_s"], row["heap_scans"], row["heap_objects"]) == (0.031, 2.0, 151_234.0)
    assert report.results[list(HEAP_RESULT_COLUMNS)].dtypes.eq("float64").all()
    assert (session.cpu_wait_s, row["cpu_wait_s"]) == (1.75, 0.02)
    assert report.results["cpu_wait_s"].dtype == "float64"
    assert session.malloc == "pinned"
    assert session.exit_s == 0.84  # added by `laptime-ci run`


def test_a_measured_zero_wait_is_known_and_a_null_wait_unknown() -> None:
    # The plugin writes cpu_wait_s null where the kernel does not say (no /proc/thread-self).
    idle = dict(TEST, nodeid="t.py::idle", cpu_wait_s=0.0)
    elsewhere = dict(TEST, nodeid="t.py::elsewhere", cpu_wait_s=None)
    report = parse(document(idle, elsewhere, session=dict(SESSION, cpu_wait_s=None)))
    assert report.warnings == []
    assert report.session.cpu_wait_s is None
    waits = report.results.set_index("nodeid")["cpu_wait_s"]
    assert waits["t.py::idle"] == 0.0
    assert math.isnan(waits["t.py::elsewhere"])


@pytest.mark.parametrize("state", MALLOC_STATES)
def test_every_allocator_state_is_read(state: str) -> None:
    report = parse(document(session=dict(SESSION, malloc=state)))
    assert report.warnings == []
    assert report.session.malloc == state


def test_the_allocator_states_are_the_plugins_four() -> None:
    # The plugin's vocabulary (client/, docs/laptime-json.md): the job model reads it.
    assert MALLOC_STATES == ("pinned", "environment", "dynamic", "other")


HEAP_RESULT_COLUMNS = ("gc_s", "heap_scans", "heap_objects")
HEAP_SESSION_KEYS = ("heap_objects_start", "heap_objects_collected", "heap_objects_end")


def test_a_test_without_a_heap_walk_has_unknown_heap_objects() -> None:
    # The plugin writes heap_objects null for a test that never called gc.get_objects().
    quiet = dict(TEST, nodeid="t.py::quiet", gc_s=0.0, heap_scans=0, heap_objects=None)
    report = parse(document(TEST, quiet))
    assert report.warnings == []
    row = report.results.set_index("nodeid").loc["t.py::quiet"]
    assert (row["gc_s"], row["heap_scans"]) == (0.0, 0.0)  # measured zero: known
    assert math.isnan(row["heap_objects"])


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("cpu_s", -1.0, "expected number >= 0"),
        ("startup_s", "soon", "expected number"),
        ("collected_tests", 2**40, "expected integer <= "),
        ("collected_files", 1.5, "expected integer"),
        ("collect_by_file", {"a.py": -2.0}, "object of numbers >= 0"),
        ("collect_by_file", {"a.py": "slow"}, "object of numbers >= 0"),
        ("collect_by_file", [1, 2], "expected object of numbers, got array"),
        ("invocation", "magic", "expected one of paths, pyargs"),
        ("rootdir", "/x" * 3000, "at most 4096 characters"),
        ("job_wall_s", 8 * 24 * 3600.0, "at most a week"),
        ("job_wall_s", True, "expected number, got true"),
        ("heap_objects_start", -1, "expected integer >= 0"),
        ("heap_objects_collected", 1.5e5, "expected integer, got 150000.0"),
        ("heap_objects_end", 2**40, "expected integer <= "),
        ("heap_objects_end", "many", "expected integer"),
        ("cpu_wait_s", -0.25, "expected number >= 0"),
        ("cpu_wait_s", "idle", "expected number"),
        ("cpu_wait_s", False, "expected number, got false"),
        ("malloc", "tcmalloc", "expected one of pinned, environment, dynamic, other"),
        ("malloc", "PINNED", "expected one of pinned, environment, dynamic, other"),
        ("malloc", 1, "expected string, got 1"),
        ("malloc", {"mmap_threshold": 65536}, "expected string, got object"),
    ],
)
def test_a_bad_session_measure_is_dropped_with_a_warning(key: str, value: Any, says: str) -> None:
    doc = document()
    doc["session"][key] = value
    report = parse(doc)
    assert getattr(report.session, key) is None
    (warning,) = report.warnings
    assert warning.startswith(f"session.{key}: ")
    assert says in warning, warning
    # Everything else survives.
    assert report.session.cpu_s == (SESSION["cpu_s"] if key != "cpu_s" else None)
    assert len(report.results) == 1


@pytest.mark.parametrize(
    ("key", "bad"),
    [
        ("cpu_s", -0.5),
        ("cpu_s", "x"),
        ("seq", -1),
        ("seq", 0.5),
        ("seq", 2**40),
        ("gc_s", -0.01),
        ("gc_s", "fast"),
        ("gc_s", True),
        ("heap_scans", -1),
        ("heap_scans", 1.5),
        ("heap_objects", -3),
        ("heap_objects", 2**40),
        ("heap_objects", [1]),
        ("cpu_wait_s", -1e-3),
        ("cpu_wait_s", "queued"),
        ("cpu_wait_s", True),
        ("cpu_wait_s", {"ns": 5}),
    ],
)
def test_a_bad_test_measure_is_dropped_with_one_warning(key: str, bad: Any) -> None:
    good = dict(TEST, nodeid="t.py::good")
    broken = [dict(TEST, nodeid=f"t.py::bad{i}", **{key: bad}) for i in range(3)]
    report = parse(document(good, *broken))
    values = report.results.set_index("nodeid")[key]
    assert values["t.py::good"] == TEST[key]
    assert all(math.isnan(values[f"t.py::bad{i}"]) for i in range(3))
    (warning,) = report.warnings
    assert warning.startswith(f"tests[1].{key}: ")
    assert f"3 invalid {key} value(s) stored as unknown" in warning


def test_reports_without_the_keys_read_as_unknown() -> None:
    old = copy.deepcopy(document())
    for key in ("cpu_s", "startup_s", "collect_by_file", "job_wall_s", "invocation", "cpu_wait_s"):
        del old["session"][key]
    del old["session"]["malloc"]
    for key in HEAP_SESSION_KEYS:
        del old["session"][key]
    for test in old["tests"]:
        del test["cpu_s"], test["seq"], test["cpu_wait_s"]
        for key in HEAP_RESULT_COLUMNS:
            del test[key]
    report = parse(old)
    assert report.warnings == []
    assert (report.session.cpu_s, report.session.collect_by_file) == (None, None)
    assert [getattr(report.session, key) for key in HEAP_SESSION_KEYS] == [None] * 3
    assert report.session.cpu_wait_s is None
    assert report.session.malloc is None
    measures = report.results[["cpu_s", "seq", *HEAP_RESULT_COLUMNS, "cpu_wait_s"]]
    assert measures.isna().all().all()
    assert measures.dtypes.eq("float64").all()


def test_junit_results_have_the_columns_unknown() -> None:
    xml = b'<testsuite><testcase classname="t" name="a" time="1.5"/></testsuite>'
    report = parse_junit(xml)
    measures = report.results[["cpu_s", "seq", *HEAP_RESULT_COLUMNS, "cpu_wait_s"]]
    assert measures.isna().all().all()
    # Float NaN like every parser's, so frames of mixed reports keep one numeric dtype.
    assert measures.dtypes.eq("float64").all()
    assert report.session.collect_s is None
    assert report.session.heap_objects_end is None
    assert report.session.cpu_wait_s is None
    assert report.session.malloc is None


def test_junit_first_keeps_its_row_and_gains_the_plugins_cpu_and_order() -> None:
    from ingest.merge import merge_reports

    xml = (
        b'<testsuite><testcase classname="tests.test_x.TestC" name="test_y[a-1]"'
        b' file="tests/test_x.py" time="0.2"/></testsuite>'
    )
    junit = parse_junit(xml)
    plugin = parse(document())
    assert junit.results["nodeid"].tolist() == plugin.results["nodeid"].tolist()
    merged = merge_reports([junit, plugin])
    (row,) = merged.results.to_dict("records")
    assert row["duration_s"] == 0.2  # the first report's row
    assert (row["cpu_s"], row["seq"]) == (TEST["cpu_s"], TEST["seq"])
    assert set(HEAP_RESULT_COLUMNS) <= set(MEASURE_COLUMNS)
    assert [row[key] for key in HEAP_RESULT_COLUMNS] == [TEST[k] for k in HEAP_RESULT_COLUMNS]
    assert "cpu_wait_s" in MEASURE_COLUMNS
    assert row["cpu_wait_s"] == TEST["cpu_wait_s"]
    assert merged.session.cpu_s == SESSION["cpu_s"]
    assert merged.session.heap_objects_end == SESSION["heap_objects_end"]
    assert merged.session.cpu_wait_s == SESSION["cpu_wait_s"]
    assert merged.session.malloc == SESSION["malloc"]
