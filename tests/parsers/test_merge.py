"""Merging one job's reports keeps every execution."""

from __future__ import annotations

from ingest.merge import merge_reports
from ingest.parsers import parse_report

JUNIT = (
    b'<testsuite name="pytest"><testcase classname="tests.test_a" name="test_x" time="1.0"/>'
    b'<testcase classname="tests.test_a" name="test_y" time="2.0"/></testsuite>'
)
JUNIT_OTHER_ENV = JUNIT.replace(b'time="1.0"', b'time="3.0"')
DURATIONS = b"""=== slowest durations ===
0.40s call     tests/test_a.py::test_x
0.10s setup    tests/test_a.py::test_x
=== 2 passed ===
"""


def test_two_reports_of_one_format_are_two_runs_of_each_test() -> None:
    merged = merge_reports([parse_report(JUNIT), parse_report(JUNIT_OTHER_ENV)]).results
    assert merged["nodeid"].tolist() == [
        "tests/test_a.py::test_x",
        "tests/test_a.py::test_y",
        "tests/test_a.py::test_x #2",
        "tests/test_a.py::test_y #2",
    ]
    assert merged["duration_s"].sum() == 8.0  # every second of both runs


def test_durations_fill_the_phases_of_the_junit_results() -> None:
    merged = merge_reports([parse_report(JUNIT), parse_report(DURATIONS)]).results
    x = merged.set_index("nodeid").loc["tests/test_a.py::test_x"]
    assert (x["duration_s"], x["call_s"], x["setup_s"]) == (1.0, 0.4, 0.1)
    assert len(merged) == 2
