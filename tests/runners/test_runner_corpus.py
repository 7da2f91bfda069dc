"""Every corpus report of a known producer: its runner is detected and every result carries
the unit that runner selects, `(unknown)` under 1% of the time."""

from __future__ import annotations

import pytest

from ingest.model import ReportParseError
from ingest.parsers import parse_report
from tests.corpus import manifest_rows, read_corpus

# manifest producer (tool_that_produced_it, prefix match) -> runner
PRODUCERS: dict[str, str] = {
    "pytest": "pytest",
    "jest-junit": "jest",
    "vitest junit": "vitest",
    "Playwright junit reporter": "playwright",
    "cypress (mocha-junit-reporter)": "cypress",
    "mocha-junit-reporter": "mocha",
    "rspec_junit_formatter": "rspec",
    "PHPUnit": "phpunit",
    "Maven Surefire": "maven",
    "JUnit (Java, system-out embedded)": "maven",
    "Ant junit": "maven",
    "Gradle": "gradle",
    "go-junit-report": "go",
    "gotestsum": "go",
    "Go (gotestsum": "go",
    "cargo-nextest": "nextest",
    "Catch2": "catch2",
    "Bazel test.xml": "bazel",
    "GoogleTest": "gtest",
    "NUnit": "dotnet",
    "VSTest TRX": "dotnet",
    "xUnit.net": "dotnet",
}
# Files listed under a producer that are not its output: the selection unit is still
# asserted, the runner is not.
NOT_THE_PRODUCER = {
    # a Testmo example of generic JUnit ("Tests.Registration", no file): nothing says PHPUnit
    "junit/dorny__test-reporter/__tests__/fixtures/external/phpunit/junit-basic.xml",
    # ESLint's junit formatter, and a hand-edited jest-junit file renamed at the root
    "junit/dorny__test-reporter/__tests__/fixtures/jest-junit-eslint.xml",
    "junit/dorny__test-reporter/__tests__/fixtures/external/jest/jest-react-component-test-results.xml",
    # GoogleTest-style without GoogleTest's root: a suite unit, runner not recognisable
    "junit/dorny__test-reporter/__tests__/fixtures/junit-with-message.xml",
}
# Labelled "Maven Surefire/Ant (Java)" in the manifest but jasmine-reporters' output
# ("JUnitXmlReporter.constructor" / "should default path..."), or a bare `test` class.
NOT_THE_PRODUCER_TOOLS = {"Maven Surefire/Ant (Java)"}


def _producer_rows() -> list[tuple[str, str, str]]:
    out = []
    for row in manifest_rows():
        tool = row["tool_that_produced_it"]
        runner = next((r for p, r in PRODUCERS.items() if tool.startswith(p)), None)
        if runner is not None and "-style" not in tool:
            out.append((row["local_path"], tool, runner))
    return out


ROWS = _producer_rows()


def test_every_producer_has_files() -> None:
    runners = {runner for _, _, runner in ROWS}
    assert runners >= {"pytest", "jest", "vitest", "playwright", "cypress", "rspec", "phpunit"}
    assert runners >= {"maven", "gradle", "go", "nextest", "catch2", "bazel", "gtest", "dotnet"}


@pytest.mark.parametrize(("rel", "tool", "runner"), ROWS, ids=[r[0] for r in ROWS])
def test_selection_unit_and_runner(rel: str, tool: str, runner: str) -> None:
    try:
        report = parse_report(read_corpus(rel), filename=rel)
    except ReportParseError:
        return  # not a report (go test output, snapshots): test_junit_corpus checks the code
    results = report.results
    if results.empty:
        return
    if rel not in NOT_THE_PRODUCER and tool not in NOT_THE_PRODUCER_TOOLS:
        assert report.runner == runner, tool
        assert report.session.runner == runner
    seconds = results["duration_s"].fillna(0.0)
    unknown = results["file"].isna() | (results["file"].astype(str) == "")
    total = float(seconds.sum())
    if total > 0:
        assert float(seconds[unknown].sum()) / total < 0.01
    else:
        assert float(unknown.mean()) < 0.01
