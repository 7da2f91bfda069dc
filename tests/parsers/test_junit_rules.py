"""The JUnit rules on tiny hand-written reports: times, outcomes, nesting, properties, reruns."""

from __future__ import annotations

import math

import pytest

from ingest.parsers import detect_format, parse_report
from ingest.parsers.nodeid import split_params, split_pytest_classname


def report_of(cases: str, *, suite: str = 'name="s"') -> bytes:
    return f"<testsuites><testsuite {suite}>{cases}</testsuite></testsuites>".encode()


@pytest.mark.parametrize(
    ("raw", "seconds"),
    [
        ("1.25", 1.25),
        ("0,5", 0.5),
        ("1,234.5", 1234.5),
        ("123,456.25", 123456.25),
        ("12,345", 12.345),
        ("0.", 0.0),
        ("1.4e-05", 1.4e-05),
        (" 2 ", 2.0),
    ],
)
def test_time_spellings(raw: str, seconds: float) -> None:
    data = report_of(f'<testcase name="a" time="{raw}"/><testcase name="b" time="3"/>')
    report = parse_report(data)
    assert report.results["duration_s"].tolist() == [pytest.approx(seconds), 3.0]
    assert report.warnings == []


def test_missing_empty_negative_and_garbage_times_are_nan_with_warnings() -> None:
    data = report_of(
        '<testcase name="a"/><testcase name="b" time=""/>'
        '<testcase name="c" time="-1.5"/><testcase name="d" time="soon"/>'
        '<testcase name="e" duration="0.25"/>'
    )
    report = parse_report(data)
    durations = report.results["duration_s"].tolist()
    assert [math.isnan(d) for d in durations[:4]] == [True, True, True, True]
    assert durations[4] == 0.25
    assert len(report.warnings) == 2
    assert "negative" in report.warnings[1]
    assert "'soon'" in report.warnings[0]


def test_outcome_spellings_and_precedence() -> None:
    data = report_of(
        '<testcase name="p"/>'
        '<testcase name="f"><failure message="boom"/></testcase>'
        '<testcase name="e"><failure/><error message="worse"/></testcase>'
        '<testcase name="s1"><skipped/></testcase>'
        '<testcase name="s2"><skip/></testcase>'
        '<testcase name="s3"><ignored/></testcase>'
        '<testcase name="s4" status="notrun"/>'
        '<testcase name="s5" result="suppressed"/>'
        '<testcase name="m"><failure>  text message  </failure></testcase>'
    )
    frame = parse_report(data).results.set_index("function")
    assert frame["outcome"].to_dict() == {
        "p": "passed",
        "f": "failed",
        "e": "error",
        "s1": "skipped",
        "s2": "skipped",
        "s3": "skipped",
        "s4": "skipped",
        "s5": "skipped",
        "m": "failed",
    }
    assert frame.loc["e", "message"] == "worse"
    assert frame.loc["m", "message"] == "text message"
    assert frame.loc["p", "message"] is None


def test_nested_suites_use_the_innermost_name_and_inherit_file() -> None:
    data = (
        b'<testsuites><testsuite name="outer" file="a/b.php">'
        b'<testsuite name="inner"><testcase classname="K" name="t1"/></testsuite>'
        b'<testcase classname="K" name="t2"/></testsuite></testsuites>'
    )
    frame = parse_report(data).results
    assert frame["suite"].tolist() == ["inner", "outer"]
    assert frame["nodeid"].tolist() == ["inner::K::t1", "outer::K::t2"]
    assert frame["file"].tolist() == ["a/b.php", "a/b.php"]


def test_report_properties_exclude_testcase_properties() -> None:
    data = report_of(
        '<properties><property name="ci" value="gh"/></properties>'
        '<testcase name="t"><properties><property name="ci" value="case"/>'
        '<property name="only_case" value="x"/></properties></testcase>'
    )
    assert parse_report(data).properties == {"ci": "gh"}


def test_surefire_rerun_failures_are_extra_attempts_of_a_failed_test() -> None:
    data = report_of(
        '<testcase classname="C" name="t" time="2">'
        '<failure message="x"/><rerunFailure message="x"/><rerunError message="y"/>'
        "</testcase>"
    )
    r = parse_report(data).results.iloc[0]
    assert (r["outcome"], r["attempts"], r["flaky"]) == ("failed", 3, False)


REPEATED = (
    '<testcase classname="C" name="x" time="1"><failure/></testcase>'
    '<testcase classname="C" name="y" time="5"/>'
    '<testcase classname="C" name="x" time="2"/>'
)


def test_repeated_names_outside_pytest_are_separate_executions_numbered_in_order() -> None:
    report = parse_report(report_of(REPEATED))
    frame = report.results
    assert frame["nodeid"].tolist() == ["s::C::x", "s::C::y", "s::C::x #2"]
    assert frame["function"].tolist() == ["x", "y", "x"]
    assert frame["duration_s"].tolist() == [1.0, 5.0, 2.0]
    assert frame["outcome"].tolist() == ["failed", "passed", "passed"]
    assert frame["attempts"].tolist() == [1, 1, 1]
    assert any("' #2'" in w for w in report.warnings)


def test_repeated_pytest_testcases_are_reruns_with_their_times_summed() -> None:
    report = parse_report(report_of(REPEATED, suite='name="pytest"'))
    frame = report.results
    assert frame["nodeid"].tolist() == ["C.py::x", "C.py::y"]
    # The machine paid for both attempts: 1 s + 2 s; the last attempt's outcome.
    assert frame["duration_s"].tolist() == [3.0, 5.0]
    assert frame["outcome"].tolist() == ["passed", "passed"]
    assert frame["attempts"].tolist() == [2, 1]
    assert frame["flaky"].tolist() == [True, False]
    assert any("merged" in w for w in report.warnings)


def test_nameless_testcases_are_left_out_with_a_warning_naming_them() -> None:
    # pytest writes <testcase time="0.001"/> when SIGINT stops a run.
    report = parse_report(report_of('<testcase name="t"/>' + '<testcase time="0.001"/>' * 4))
    assert report.results["nodeid"].tolist() == ["s::t"]
    (warning,) = [w for w in report.warnings if "no test name" in w]
    assert warning.startswith("4 result(s) with no test name left out")
    assert 'testcase 2 (time="0.001")' in warning
    assert 'testcase 5 (time="0.001")' in warning


def test_a_tool_name_that_looks_like_a_suffix_does_not_collide() -> None:
    frame = parse_report(
        report_of('<testcase name="t"/><testcase name="t #2"/><testcase name="t"/>')
    ).results
    assert frame["nodeid"].is_unique
    assert len(frame) == 3


def test_brackets_are_params_only_for_pytest() -> None:
    pytest_report = report_of(
        '<testcase classname="tests.test_x.TestC" name="test_y[a-1]"/>', suite='name="pytest"'
    )
    r = parse_report(pytest_report).results.iloc[0]
    assert (r["nodeid"], r["file"], r["classname"], r["function"], r["params"]) == (
        "tests/test_x.py::TestC::test_y[a-1]",
        "tests/test_x.py",
        "TestC",
        "test_y",
        "a-1",
    )
    other = parse_report(report_of('<testcase classname="k" name="renders [x]"/>')).results
    assert (other["function"].iloc[0], other["params"].iloc[0]) == ("renders [x]", None)


@pytest.mark.parametrize(
    ("classname", "file", "expected"),
    [
        ("tests.test_x.TestC", None, ("tests/test_x.py", "TestC")),
        ("tests.test_x.TestC.TestD", None, ("tests/test_x.py", "TestC::TestD")),
        ("tests.pkg.test_x", None, ("tests/pkg/test_x.py", "")),
        ("test_x", None, ("test_x.py", "")),
        ("tests.v1.test_x.TestC", "tests/v1/test_x.py", ("tests/v1/test_x.py", "TestC")),
        ("a.test_x.TestC", "/abs/ci/a/test_x.py", ("a/test_x.py", "TestC")),
        ("Tests.test_x", "Tests/test_x.py", ("Tests/test_x.py", "")),
        # A directory's dot is not a slash (`python3/11` was the bug).
        (
            "venv.lib.python3.11.site-packages.pkg.test_x.TestC",
            None,
            ("venv/lib/python3.11/site-packages/pkg/test_x.py", "TestC"),
        ),
        (".venv.lib.python3.11.pkg.test_x", None, (".venv/lib/python3.11/pkg/test_x.py", "")),
        (
            "lib.python3.11.pkg.test_x.TestC",
            "/ci/lib/python3.11/pkg/test_x.py",
            ("lib/python3.11/pkg/test_x.py", "TestC"),
        ),
    ],
)
def test_split_pytest_classname(
    classname: str, file: str | None, expected: tuple[str, str]
) -> None:
    assert split_pytest_classname(classname, file) == expected


def test_split_params() -> None:
    assert split_params("test_y[p1-p2]") == ("test_y", "p1-p2")
    assert split_params("test_y[a[0]]") == ("test_y", "a[0]")
    assert split_params("test_y") == ("test_y", None)
    assert split_params("[doctest]") == ("[doctest]", None)


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        (b"<testsuites/>", "junit"),
        (b"\xef\xbb\xbf  <?xml version='1.0'?><testsuite/>", "junit"),
        ("<testsuite/>".encode("utf-16"), "junit"),
        (b'\n{"format": "laptime-json"}', "laptime-json"),
        (b"=== slowest durations ===\n0.10s call t.py::t\n", "durations"),
    ],
)
def test_detect_format(data: bytes, fmt: str) -> None:
    assert detect_format(data) == fmt
