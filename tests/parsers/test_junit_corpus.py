"""Differential test over the whole shared corpus: what `laptime parse` prints agrees with an
independent reading of each file ("executions, not names").

For every JUnit file that parses: the executions printed == the testcase elements counted by
ElementTree minus the documented merges (repeated pytest testcases are rerun attempts, see
ingest/parsers/executions.py), and the sum of `duration_s` == the sum of the testcase `time`
attributes (nanosecond reports divided by 1e9). Every durations log: executions == distinct
nodeids of its rows, seconds == the sum of its rows. Files that are not reports (xUnit native,
go test output, markdown, snapshots) fail with the code listed, under `--format auto`.
"""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from app.cli.parse_cmd import parse
from ingest.model import ReportParseError
from ingest.parsers import parse_report
from model.frames import RESULT_COLUMNS
from tests import corpus

CORPUS = corpus.CORPUS / "junit"
DURATIONS = corpus.CORPUS / "durations"

FAILS_WITH: dict[str, str] = {
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/empty.xml": "empty-report",
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/invalid.xml": "not-junit",
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/other/other-non-junit-file.txt": "durations-missing",  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/subfolder/non-junit-file.txt": "durations-missing",  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/allure.properties": "durations-missing",  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/invalid.xml": "not-junit",  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/secret-file.txt": "durations-missing",  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/test.SampleTest.txt": "durations-missing",  # noqa: E501
    "allure-framework__allure2/plugins/xunit-xml-plugin/src/test/resources/allure.properties": "durations-missing",  # noqa: E501
    "allure-framework__allure2/plugins/xunit-xml-plugin/src/test/resources/xunitdata/failed-test.xml": "not-junit",  # noqa: E501
    "allure-framework__allure2/plugins/xunit-xml-plugin/src/test/resources/xunitdata/framework-test.xml": "not-junit",  # noqa: E501
    "allure-framework__allure2/plugins/xunit-xml-plugin/src/test/resources/xunitdata/passed-test.xml": "not-junit",  # noqa: E501
    "apache__maven-surefire/surefire-its/src/test/resources/surefire-570-multipleReportDirectories/module1/src/test/resources/surefire-reports2/org.apache.maven.surefireReport.surefireReportTest.MyClassTest.txt": "durations-missing",  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/failsafe-summary-old.xml": "not-junit",  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/failsafe-summary.xml": "not-junit",  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/test-reports/com.shape.CircleTest.txt": "durations-missing",  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/test-reports/com.shapeclone.CircleTest.txt": "durations-missing",  # noqa: E501
    "catchorg__Catch2/tests/SelfTest/Baselines/junit.sw.approved.txt": "xml-malformed",
    "catchorg__Catch2/tests/SelfTest/Baselines/junit.sw.multi.approved.txt": "xml-malformed",
    "dorny__test-reporter/__tests__/__outputs__/dart-json.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/dotnet-nunit.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/dotnet-trx-only-failed.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/dotnet-trx.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/dotnet-xunitv3.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/fluent-validation-test-results.md": "durations-missing",  # noqa: E501
    "dorny__test-reporter/__tests__/__outputs__/golang-json.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/jest-junit-eslint.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/jest-junit.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/jest-react-component-test-results.md": "durations-missing",  # noqa: E501
    "dorny__test-reporter/__tests__/__outputs__/jest-test-errors-results.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/jest-test-results.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/junit-basic.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/junit-complete.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/junit-with-message.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/mocha-json.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/mocha-test-results.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/phpunit-junit-basic-results.md": "durations-missing",  # noqa: E501
    "dorny__test-reporter/__tests__/__outputs__/phpunit-phpcheckstyle-results.md": "durations-missing",  # noqa: E501
    "dorny__test-reporter/__tests__/__outputs__/phpunit-test-results.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/provider-test-results.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/pulsar-test-results-no-merge.md": "durations-missing",  # noqa: E501
    "dorny__test-reporter/__tests__/__outputs__/pulsar-test-results.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/python-xunit-pytest.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/python-xunit-unittest.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/rspec-json.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/silent-notes-test-results.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/swift-xunit.md": "durations-missing",
    "dorny__test-reporter/__tests__/__outputs__/tester-bootstrap-test-results.md": "durations-missing",  # noqa: E501
    "dorny__test-reporter/__tests__/__outputs__/tester-v1.7-test-results.md": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/dart-json.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/dotnet-nunit.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/dotnet-trx.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/golang-json.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/java-junit.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/jest-junit.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/mocha-json.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/phpunit-junit.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/python-xunit.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/rspec-json.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/swift-xunit.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/__snapshots__/tester-junit.test.ts.snap": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/dart-json.json": "json-malformed",
    "dorny__test-reporter/__tests__/fixtures/empty/dart-json.json": "json-malformed",
    "dorny__test-reporter/__tests__/fixtures/empty/mocha-json.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/empty/rspec-json.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/external/flutter/files.txt": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/external/flutter/provider-test-results.json": "json-malformed",  # noqa: E501
    "dorny__test-reporter/__tests__/fixtures/external/java/files.txt": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/external/jest/files.txt": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/external/mocha/files.txt": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/external/mocha/mocha-test-results.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/golang-json.json": "json-malformed",
    "dorny__test-reporter/__tests__/fixtures/mocha-json.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/rspec-json.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/test-errors/jest/files.txt": "durations-missing",
    "inorton__junit2html/tests/junit-testrun.xml": "not-junit",
    "jstemmer__go-junit-report/testdata/001-pass-fail-skip.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/005-no-xml-header.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/007-compiled_test.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/008-parallel.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/009-coverage.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/010-multipkg-coverage.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/011-go_1_5.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/012-subtests.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/013-syntax-error.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/014-panic.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/015-empty.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/016-repeated-names.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/017-race.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/018-coverpkg.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/019-pass.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/021-cached.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/022-bench.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/023-benchmem.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/024-benchtests.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/025-benchcount.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/026-testbenchmultiple.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/027-benchdecimal.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/028-bench-1cpu.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/029-bench-16cpu.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/030-stdout.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/031-syntax-error-test-binary.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/032-failed-summary.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/033-bench-mb.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/034-notest.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/035-whitespace.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/036-benchfail.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/037-legacy-fail.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/038-test-pkg-name.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/039-no-properties.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/100-pass.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/101-fail.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/102-broken.gojson.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/103-subtests.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/104-race.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/105-panic.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/106-testmain.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/107-skip.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/108-paniclate.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/109-bench.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/110-benchfail.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/111-empty.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/112-parallel.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/113-race.gojson.txt": "json-malformed",
    "launchableinc__cli/tests/data/broken_xml/broken.xml": "durations-missing",
    "launchableinc__cli/tests/data/ctest/Testing/latest/Test.xml": "not-junit",
    "launchableinc__cli/tests/data/cts/test_result.xml": "not-junit",
    "launchableinc__cli/tests/data/cucumber/report/dummy.xml": "empty-report",
    "launchableinc__cli/tests/data/maven/reports/dummy.xml": "not-junit",
    "launchableinc__cli/tests/data/robot/dryrun.xml": "not-junit",
    "launchableinc__cli/tests/data/robot/output.xml": "not-junit",
    "launchableinc__cli/tests/data/robot/single-output.xml": "not-junit",
    "mikepenz__action-junit-report/test_results/corrupt-junit/e2e-tests/corrupt/target/sf-reports/TEST-test.CorruptTest.xml": "xml-truncated",  # noqa: E501
    "mikepenz__action-junit-report/test_results/junit-web-test/expected.xml": "xml-malformed",
    "mikepenz__action-junit-report/test_results/junit-web-test/expectedRetries.xml": "xml-malformed",  # noqa: E501
    "mikepenz__action-junit-report/test_results/tests/email/pom.xml": "not-junit",
    "mikepenz__action-junit-report/test_results/tests/pom.xml": "not-junit",
    "mikepenz__action-junit-report/test_results/tests/utils/pom.xml": "not-junit",
    "semaphoreci__test-results/priv/merging/out.json": "json-schema",
    "semaphoreci__test-results/priv/merging/pipeline/job1/junit.json": "json-schema",
    "semaphoreci__test-results/priv/merging/pipeline/job2/junit.json": "json-schema",
    "semaphoreci__test-results/priv/merging/pipeline/job3/junit.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/embedded/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/exunit/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/generic/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/golang/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/phpunit/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/rspec/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/stdout/out.json": "json-schema",
}

# Native .NET reports: NUnit <test-case> / TRX leaf <UnitTestResult> elements are
# counted instead of <testcase>.
NATIVE = {
    "dorny__test-reporter/__tests__/fixtures/dotnet-nunit.xml",
    "dorny__test-reporter/__tests__/fixtures/dotnet-trx.trx",
    "dorny__test-reporter/__tests__/fixtures/dotnet-xunitv3.trx",
    "dorny__test-reporter/__tests__/fixtures/empty/dotnet-trx-empty-test-definitions.trx",
    "dorny__test-reporter/__tests__/fixtures/empty/dotnet-trx.trx",
    "dorny__test-reporter/__tests__/fixtures/external/FluentValidation.Tests.trx",
    "dorny__test-reporter/__tests__/fixtures/external/SilentNotes.trx",
    "dorny__test-reporter/__tests__/fixtures/external/nunit-sample.xml",
    "launchableinc__cli/tests/data/dotnet/test-result.xml",
    "launchableinc__cli/tests/data/nunit/list.xml",
    "launchableinc__cli/tests/data/nunit/nunit-reporter-bug-with-nested-type.xml",
    "launchableinc__cli/tests/data/nunit/output-linux.xml",
    "launchableinc__cli/tests/data/nunit/output-windows.xml",
}

# Repeated pytest testcases merged as attempts: file -> testcase elements merged away.
MERGED: dict[str, int] = {
    # pytest-style hand-made reports, one <testcase> per rerun attempt (flaky, rerunfailures)
    "mikepenz__action-junit-report/test_results/flaky_retries/flaky_all_failures.xml": 2,
    "mikepenz__action-junit-report/test_results/flaky_retries/flaky_success_first.xml": 2,
    "mikepenz__action-junit-report/test_results/flaky_retries/flaky_with_classname_file.xml": 2,
}
# container-structure-test writes nanoseconds: the parser divides by 1e9 (with a warning).
NANOSECONDS = {
    "mikepenz__action-junit-report/test_results/container-structure/test.xml",
    "mikepenz__action-junit-report/test_results/multiple/test_10.xml",
    "mikepenz__action-junit-report/test_results/multiple/test_11.xml",
    "mikepenz__action-junit-report/test_results/multiple/test_12.xml",
}
_ROW = re.compile(r"^\s*(\d+\.\d+)s\s+(?:setup|call|teardown)\s+(\S.*?)\s*$", re.MULTILINE)


def corpus_files(root: Path = CORPUS) -> list[str]:
    return corpus.corpus_files(root=root)


def printed(path: Path) -> list[dict[str, object]]:
    """The JSON lines `laptime parse` prints for one file."""
    result = CliRunner().invoke(parse, [str(path)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def attribute_seconds(element: ET.Element) -> float:
    raw = element.get("time") or element.get("duration")
    try:
        return float(raw) if raw is not None else 0.0
    except ValueError:
        return 0.0


def _check_native(path: Path, frame: pd.DataFrame) -> None:
    """NUnit test-cases or TRX leaf results, and their seconds, read independently."""
    root = ET.parse(path).getroot()
    local = {e: e.tag.rsplit("}", 1)[-1] for e in root.iter()}
    if local[root] == "TestRun":
        cases = [
            e
            for e, tag in local.items()
            if tag == "UnitTestResult" and not any(local[c] == "InnerResults" for c in e)
        ]
        expected_s = math.fsum(_timespan(e.get("duration")) for e in cases)
    else:
        cases = [e for e, tag in local.items() if tag == "test-case"]
        expected_s = math.fsum(float(e.get("duration") or e.get("time") or 0) for e in cases)
    assert len(frame) == len(cases)
    assert frame["nodeid"].is_unique
    assert float(frame["duration_s"].fillna(0).sum()) == pytest.approx(expected_s, abs=1e-6)


def _timespan(raw: str | None) -> float:
    if not raw:
        return 0.0
    hours, minutes, seconds = raw.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def test_table_names_only_corpus_files() -> None:
    files = set(corpus_files())
    assert files >= NATIVE
    assert set(FAILS_WITH) <= files
    assert set(MERGED) | NANOSECONDS <= files


@pytest.mark.parametrize("rel", corpus_files())
def test_corpus_file(rel: str) -> None:
    path = corpus.corpus_path(rel, CORPUS)
    data = path.read_bytes()
    if rel in FAILS_WITH:
        with pytest.raises(ReportParseError) as caught:
            parse_report(data, filename=rel)
        assert caught.value.code == FAILS_WITH[rel]
        assert caught.value.filename == rel
        return
    frame = parse_report(data, filename=rel).results
    if rel in NATIVE:
        _check_native(path, frame)
        return
    assert tuple(frame.columns) == RESULT_COLUMNS
    assert frame["duration_s"].dtype == "float64"
    assert frame["attempts"].dtype == "int64"
    assert frame["flaky"].dtype == "bool"
    assert frame["nodeid"].is_unique
    assert set(frame["outcome"]) <= {"passed", "failed", "error", "skipped"}
    assert not (frame["duration_s"] < 0).any()
    # The differential part: an independent reading of the same file.
    # A testcase with no name (jest writes one for a failing suite) is left out with a warning.
    testcases = [
        t for t in ET.parse(path).getroot().iter("testcase") if (t.get("name") or "").strip()
    ]
    lines = printed(path)
    assert len(lines) == len(testcases) - MERGED.get(rel, 0)
    assert sum(int(line["attempts"]) for line in lines) >= len(testcases)  # type: ignore[call-overload]
    expected_s = math.fsum(attribute_seconds(t) for t in testcases)
    if rel in NANOSECONDS:
        expected_s /= 1e9
    printed_s = math.fsum(float(line["duration_s"] or 0.0) for line in lines)  # type: ignore[arg-type]
    assert printed_s == pytest.approx(expected_s, rel=1e-9, abs=1e-6)


@pytest.mark.parametrize("rel", [f for f in corpus_files(DURATIONS) if f.endswith(".txt")])
def test_durations_corpus_file(rel: str) -> None:
    path = corpus.corpus_path(rel, DURATIONS)
    rows = _ROW.findall(path.read_text())
    assert rows, "the independent reading found no rows"
    lines = printed(path)
    assert len(lines) == len({nodeid for _, nodeid in rows})
    printed_s = math.fsum(float(line["duration_s"] or 0.0) for line in lines)  # type: ignore[arg-type]
    assert printed_s == pytest.approx(math.fsum(float(s) for s, _ in rows), abs=1e-6)
