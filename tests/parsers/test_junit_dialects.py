"""Per-dialect spot checks on real corpus files: identity, outcome, duration, reruns."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from ingest.model import ParsedReport
from ingest.parsers import parse_report
from tests import corpus

CORPUS = corpus.CORPUS / "junit"
MIKEPENZ = "mikepenz__action-junit-report/test_results"


def parse(rel: str) -> ParsedReport:
    return parse_report(corpus.read_corpus(rel, CORPUS), filename=rel)


def row(report: ParsedReport, nodeid: str) -> dict[str, Any]:
    frame = report.results
    match = frame[frame["nodeid"] == nodeid]
    assert len(match) == 1, sorted(frame["nodeid"])[:20]
    result: dict[str, Any] = {str(k): v for k, v in match.iloc[0].items()}
    return result


def test_pytest_xunit2_rebuilds_nodeids_without_file_attributes() -> None:
    report = parse("dorny__test-reporter/__tests__/fixtures/python-xunit-pytest.xml")
    r = row(report, "tests/test_lib.py::test_parameterized[param1]")
    assert (r["file"], r["function"], r["params"], r["classname"]) == (
        "tests/test_lib.py",
        "test_parameterized",
        "param1",
        None,
    )
    assert report.properties["custom_prop"] == "custom_val"


def test_pytest_reruns_as_repeated_testcases_collapse_into_one_flaky_result() -> None:
    report = parse(f"{MIKEPENZ}/flaky_retries/flaky_with_classname_file.xml")
    flaky = row(report, "test_foo.py::TestFoo::test_foo")
    # failure, then error, then pass: three attempts, the last one's outcome; the time is
    # the sum of the attempts' (the suite's time="5.526" says the same: 3 x 1.842).
    assert (flaky["outcome"], flaky["attempts"], flaky["flaky"]) == ("passed", 3, True)
    assert flaky["duration_s"] == pytest.approx(5.526)
    # The absolute file attribute ends with the module's path, which the nodeid uses.
    assert flaky["file"] == "test_foo.py"
    # Same test name in another class is a different test.
    other = row(report, "test_bar.py::TestBar::test_foo")
    assert (other["attempts"], other["flaky"]) == (1, False)


def test_repeated_testcase_ending_in_error_is_not_flaky() -> None:
    report = parse(f"{MIKEPENZ}/flaky_retries/flaky_success_first.xml")
    r = row(report, "test_order.py::TestOrder::test_success_first")
    assert (r["outcome"], r["attempts"], r["flaky"]) == ("error", 3, False)
    assert r["message"] == "later error"


def test_surefire_flaky_failure_and_error_elements_count_as_attempts() -> None:
    report = parse(
        "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/"
        "testsuitexmlparser/TEST-org.acme.FlakyTest.xml"
    )
    # Three <flakyFailure> and one <flakyError> before the passing run.
    r = row(report, "org.acme.FlakyTest::testFlaky")
    assert (r["outcome"], r["attempts"], r["flaky"]) == ("passed", 5, True)
    assert r["duration_s"] == pytest.approx(0.034)
    stable = row(report, "org.acme.FlakyTest::testStable")
    assert (stable["attempts"], stable["flaky"]) == (1, False)


def test_surefire_style_flaky_in_a_named_suite() -> None:
    report = parse(f"{MIKEPENZ}/junit_flaky_failure/mixed_flaky_and_passed.xml")
    r = row(report, "MixedTestSuite::com.example.FlakyTest::testFlaky")
    assert (r["outcome"], r["attempts"], r["flaky"], r["suite"]) == (
        "passed",
        2,
        True,
        "MixedTestSuite",
    )
    assert r["classname"] == "com.example.FlakyTest"


def test_jest_identity_keeps_describe_blocks_in_the_classname() -> None:
    report = parse("dorny__test-reporter/__tests__/fixtures/jest-junit.xml")
    r = row(report, "__tests__\\main.test.js::Test 1 › Test 1.1::Failing test")
    assert (r["outcome"], r["duration_s"], r["params"]) == ("failed", 0.002, None)
    assert r["function"] == "Failing test"


def test_playwright_projects_stay_apart_by_hostname() -> None:
    report = parse("launchableinc__cli/tests/data/playwright/report.xml")
    frame = report.results
    assert len(frame) == 93
    assert frame["nodeid"].str.startswith(("chromium::", "firefox::", "webkit::")).all()


def test_google_test_disabled_status_is_skipped_without_time() -> None:
    report = parse(f"{MIKEPENZ}/issues/testDisabled.xml")
    frame = report.results
    # The suite says tests=22 disabled=10 failures=4 errors=2, and the elements agree.
    assert frame["outcome"].value_counts().to_dict() == {
        "skipped": 10,
        "passed": 6,
        "failed": 4,
        "error": 2,
    }
    assert row(report, "factorial::disabled_test")["outcome"] == "skipped"
    assert frame["duration_s"].isna().all()


def test_a_failure_element_outranks_a_disabled_status() -> None:
    # The element is evidence the test ran and failed; the status attribute is a label.
    report = parse(f"{MIKEPENZ}/issues/testFailedDisabled.xml")
    r = report.results.iloc[0].to_dict()
    assert (r["outcome"], r["message"]) == ("failed", "Assert: Boolean true check failed.")


def test_go_junit_report_repeated_names_are_three_executions() -> None:
    # `go test -count=3`: three runs of TestRepeat, each its own execution.
    report = parse("jstemmer__go-junit-report/testdata/016-report.xml")
    assert report.results["nodeid"].tolist() == [
        "package/repeated-names::TestRepeat",
        "package/repeated-names::TestRepeat #2",
        "package/repeated-names::TestRepeat #3",
    ]
    assert report.results["attempts"].tolist() == [1, 1, 1]
    assert report.properties["go.version"] == "1.0"


def test_gotestsum_outcomes_and_suite_properties() -> None:
    report = parse("gotestyourself__gotestsum/internal/junitxml/testdata/junitxml-report.golden")
    outcomes = report.results["outcome"].value_counts().to_dict()
    assert sum(outcomes.values()) == 60
    assert outcomes["skipped"] > 0
    assert outcomes["failed"] > 0
    skipped = row(report, "gotest.tools/gotestsum/testjson/internal/good::TestSkipped")
    assert skipped["outcome"] == "skipped"


def test_nextest_and_catch2_failures() -> None:
    nextest = parse(f"{MIKEPENZ}/nextest/basic.xml")
    r = row(nextest, "oxidized_navigation::parry3d::test_failure")
    assert (r["outcome"], r["duration_s"]) == ("failed", pytest.approx(0.774))
    catch2 = parse(f"{MIKEPENZ}/catch2/report.xml")
    assert catch2.results["outcome"].tolist() == ["failed"]


def test_container_structure_test_nanoseconds_are_converted_with_a_warning() -> None:
    report = parse(f"{MIKEPENZ}/multiple/test_10.xml")
    assert report.results["duration_s"].tolist() == pytest.approx([0.999638317, 0.0, 0.0])
    assert any("nanoseconds" in w for w in report.warnings)


def test_bazel_surefire_identity() -> None:
    report = parse(
        "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/"
        "mylib_test1/test.xml"
    )
    r = row(report, "com.ninjinkun.MyLibTest1::testFibonacci")
    assert r["duration_s"] == pytest.approx(2.02)


def test_identity_is_deterministic_across_parses() -> None:
    rel = "dorny__test-reporter/__tests__/fixtures/external/java/pulsar-test-report.xml"
    first, second = parse(rel).results, parse(rel).results
    pd.testing.assert_frame_equal(first, second)


def test_jest_suite_named_after_its_file_gives_the_file() -> None:
    from ingest.parsers import parse_report

    report = parse_report(
        b'<testsuites><testsuite name="src/a/sum.test.ts">'
        b'<testcase classname="sum adds" name="sum adds 1 + 2" time="0.5"/></testsuite>'
        b'<testsuite name="Login flow"><testcase classname="Login flow" name="works" time="1"/>'
        b"</testsuite></testsuites>"
    )
    files = dict(zip(report.results["function"], report.results["file"], strict=True))
    assert files["sum adds 1 + 2"] == "src/a/sum.test.ts"
    # Not a path: the suite is still the unit the report identifies, not "(unknown)".
    assert files["works"] == "Login flow"
