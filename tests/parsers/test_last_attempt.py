"""Merged reruns: duration_s is what the machine paid (every attempt), and the last attempt's
own time is kept beside it."""

from __future__ import annotations

import math

import pytest

from ingest.parsers import parse_report

PYTEST_RERUNS = b"""<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="3">
<testcase classname="tests.test_a" name="test_flaky" file="tests/test_a.py" time="1.0">
  <failure message="boom">boom</failure></testcase>
<testcase classname="tests.test_a" name="test_flaky" file="tests/test_a.py" time="0.25"/>
<testcase classname="tests.test_a" name="test_once" file="tests/test_a.py" time="0.5"/>
</testsuite></testsuites>"""

DURATIONS_RERUNS = b"""======================== slowest durations =========================
1.00s call     tests/test_a.py::test_flaky
0.10s setup    tests/test_a.py::test_flaky
0.50s call     tests/test_a.py::test_flaky
0.05s setup    tests/test_a.py::test_flaky
0.30s call     tests/test_a.py::test_once
"""


@pytest.mark.parametrize(
    ("name", "body", "total", "last"),
    [("junit.xml", PYTEST_RERUNS, 1.25, 0.25), ("durations.txt", DURATIONS_RERUNS, 1.65, 0.55)],
)
def test_a_merged_rerun_sums_attempts_and_keeps_the_last(
    name: str, body: bytes, total: float, last: float
) -> None:
    results = parse_report(body, filename=name).results.set_index("function")
    flaky = results.loc["test_flaky"]
    assert int(flaky["attempts"]) == 2
    assert flaky["duration_s"] == pytest.approx(total)
    assert flaky["last_attempt_s"] == pytest.approx(last)
    # A test that ran once has no separate last attempt.
    assert math.isnan(results.loc["test_once", "last_attempt_s"])


def test_the_plugins_merged_attempts_keep_the_last_ones_phases() -> None:
    import json

    document = {
        "format": "laptime-json",
        "version": 1,
        "session": {},
        "tests": [
            {
                "nodeid": "tests/test_a.py::test_flaky",
                "outcome": "passed",
                "duration_s": 3.0,
                "setup_s": 0.1,
                "call_s": 0.8,
                "teardown_s": 0.1,
                "attempts": 3,
            }
        ],
    }
    results = parse_report(json.dumps(document).encode(), filename="r.json").results
    assert results.loc[0, "duration_s"] == pytest.approx(3.0)
    assert results.loc[0, "last_attempt_s"] == pytest.approx(1.0)
