"""A time outside 0 s .. 7 days is unknown, with a warning, in every parser.

`<testcase time="inf"/>` or `time="1e308"` was stored as 1.8e308 s (the warning called it
nanoseconds) and made the project's grand_total_s null and every share 0.0.
"""

from __future__ import annotations

import json
import math

import pytest

from ingest.parsers import parse_report
from ingest.parsers.row_checks import MAX_DURATION_S

# (written value, what a parser must keep: None = unknown)
ODD = [
    ("inf", None),
    ("Infinity", None),
    ("1e308", None),
    ("-1", None),
    ("nan", None),
    (repr(MAX_DURATION_S + 1), None),
    (repr(MAX_DURATION_S), MAX_DURATION_S),
    ("0", 0.0),
    ("2.5", 2.5),
]


def _junit(time: str) -> bytes:
    return (
        '<testsuite name="pytest"><testcase classname="tests.test_a" name="test_odd" '
        f'time="{time}"/><testcase classname="tests.test_a" name="test_ok" time="3"/>'
        "</testsuite>"
    ).encode()


def _durations(time: str) -> bytes:
    return (
        "============================= slowest durations ==============================\n"
        f"{time}s call     tests/test_a.py::test_odd\n"
        "3.00s call     tests/test_a.py::test_ok\n"
    ).encode()


def _laptime_json(time: str) -> bytes:
    value = float(time)
    tests = [
        {"nodeid": "tests/test_a.py::test_odd", "outcome": "passed", "duration_s": value},
        {"nodeid": "tests/test_a.py::test_ok", "outcome": "passed", "duration_s": 3.0},
    ]
    return json.dumps({"format": "laptime-json", "version": 1, "tests": tests}).encode()


def _check(data: bytes, expected: float | None, *, name: str) -> None:
    report = parse_report(data, filename=name)
    frame = report.results.set_index("nodeid")
    odd = float(frame.loc["tests/test_a.py::test_odd", "duration_s"])
    assert float(frame.loc["tests/test_a.py::test_ok", "duration_s"]) == 3.0
    # Whatever the value, nothing infinite or over a week reaches a sum.
    assert math.isfinite(frame["duration_s"].sum())
    assert frame["duration_s"].max() <= MAX_DURATION_S
    if expected is None:
        assert math.isnan(odd)
    else:
        assert odd == pytest.approx(expected)
        assert not [w for w in report.warnings if "outside 0 s .. 7 days" in w]
    assert not [w for w in report.warnings if "nanoseconds" in w]


@pytest.mark.parametrize(("time", "expected"), ODD)
def test_junit(time: str, expected: float | None) -> None:
    _check(_junit(time), expected, name="junit.xml")


@pytest.mark.parametrize(("time", "expected"), [(t, e) for t, e in ODD if t not in ("-1",)])
def test_laptime_json(time: str, expected: float | None) -> None:
    if time.lower() in ("inf", "infinity", "nan"):
        # JSON has no such numbers: the report is refused with a precise error instead.
        with pytest.raises(Exception, match="json"):
            parse_report(_laptime_json(time).replace(b"Infinity", b"1e999"), filename="r.json")
        return
    _check(_laptime_json(time), expected, name="r.json")


def test_laptime_json_phases_out_of_range_are_unknown() -> None:
    tests = [
        {"nodeid": "tests/test_a.py::test_odd", "outcome": "passed", "setup_s": 1.0,
         "call_s": 1e308},
        {"nodeid": "tests/test_a.py::test_ok", "outcome": "passed", "duration_s": 3.0},
    ]  # fmt: skip
    data = json.dumps({"format": "laptime-json", "version": 1, "tests": tests}).encode()
    report = parse_report(data, filename="r.json")
    odd = report.results.set_index("nodeid").loc["tests/test_a.py::test_odd"]
    assert math.isnan(odd["call_s"])
    assert odd["duration_s"] == 1.0  # the phases known
    assert any("tests[].call_s: 1 value(s) outside 0 s .. 7 days" in w for w in report.warnings)


@pytest.mark.parametrize("time", ["99999999.00", "604801.00"])
def test_durations_text(time: str) -> None:
    report = parse_report(_durations(time), filename="durations.txt")
    _check(_durations(time), None, name="durations.txt")
    (warning,) = [w for w in report.warnings if "outside" in w]
    assert warning.startswith("durations row time: 1 value(s) outside 0 s .. 7 days")
    assert " s)" in warning  # seconds, the unit the report was read in


@pytest.mark.parametrize("time", ["inf", "1e308", "700000"])
def test_junit_warning_says_seconds_and_not_nanoseconds(time: str) -> None:
    report = parse_report(_junit(time), filename="junit.xml")
    (warning,) = [w for w in report.warnings if "outside" in w]
    assert warning.startswith("testcase time: 1 value(s) outside 0 s .. 7 days")
    assert "nanoseconds" not in " ".join(report.warnings)


def test_nanosecond_reports_still_convert() -> None:
    report = parse_report(_junit("1000000000").replace(b'time="3"', b'time="3000000000"'))
    assert sorted(report.results["duration_s"]) == [1.0, 3.0]
