"""Every file of the shared JUnit corpus parses to a known count or fails with a known code.

Counts are what laptime gets, checked by hand against the files: MANIFEST's "N testcases"
counts elements, while repeated identical testcases (same identity) collapse into one result
with `attempts`. Files that are not JUnit (TRX, NUnit, go test output, markdown, snapshots)
must fail with the code shown, under `--format auto`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis.frames import RESULT_COLUMNS
from ingest.model import ReportParseError
from ingest.parsers import parse_report

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus" / "junit"

EXPECTED: dict[str, int | str] = {
    "DataDog__datadog-ci/e2e/fixtures/junit-reports/junit.xml": 2,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "DataDog__datadog-ci/e2e/fixtures/junit-reports/subfolder/junit-2.xml": 2,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/autodiscovery/junit-report.xml": 1,  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/autodiscovery/nested/TEST-suite.xml": 1,  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/autodiscovery/regular-file.xml": 1,  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/autodiscovery/test-results.xml": 1,  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/empty.xml": "empty-report",
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/go-report.xml": 2,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/invalid.xml": "not-junit",
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/java-report.xml": 2,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/junit.xml/valid-report-2.xml": 2,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/junit.xml/valid-report.xml": 2,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/other/other-non-junit-file.txt": "durations-missing",  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/subfolder/invalid-no-tests.xml": 0,  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/subfolder/js-report.xml": 2,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "DataDog__datadog-ci/packages/plugin-junit/src/__tests__/fixtures/subfolder/non-junit-file.txt": "durations-missing",  # noqa: E501
    "ScaCap__action-surefire-report/integration-tests/custom_reports/TEST-pro.taskana.common.api.ListUtilTest-H2.xml": 1,  # noqa: E501
    "ScaCap__action-surefire-report/integration-tests/custom_reports/TEST-test.MyIntegrationTestSuite.xml": 5,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/allure.properties": "durations-missing",  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/TEST-org.allurefw.report.junit.JunitTestResultsTest.xml": 5,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/TEST-status-attribute.xml": 3,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/TEST-test.CdataMessage.xml": 2,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/TEST-test.PropertiesTest.xml": 1,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/TEST-test.RetryTest.xml": 1,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/TEST-test.SampleTest.xml": 1,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/invalid.xml": "not-junit",  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/path-traversal.xml": 1,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/secret-file.txt": "durations-missing",  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/test.SampleTest.txt": "durations-missing",  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/testsuites.xml": 3,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/with-timestamp.xml": 1,  # noqa: E501
    "allure-framework__allure2/plugins/junit-xml-plugin/src/test/resources/junitdata/zulu-timestamp.xml": 2,  # noqa: E501
    "allure-framework__allure2/plugins/xunit-xml-plugin/src/test/resources/allure.properties": "durations-missing",  # noqa: E501
    "allure-framework__allure2/plugins/xunit-xml-plugin/src/test/resources/xunitdata/failed-test.xml": "not-junit",  # noqa: E501
    "allure-framework__allure2/plugins/xunit-xml-plugin/src/test/resources/xunitdata/framework-test.xml": "not-junit",  # noqa: E501
    "allure-framework__allure2/plugins/xunit-xml-plugin/src/test/resources/xunitdata/passed-test.xml": "not-junit",  # noqa: E501
    "apache__maven-surefire/maven-surefire-report-plugin/src/test/resources/unit/basic-surefire-report-test/surefire-reports/TEST-com.shape.CircleTest.xml": 8,  # noqa: E501
    "apache__maven-surefire/maven-surefire-report-plugin/src/test/resources/unit/surefire-report-enclosed/surefire-reports/TEST-surefire.MyTest-enclosed.xml": 1,  # noqa: E501
    "apache__maven-surefire/maven-surefire-report-plugin/src/test/resources/unit/surefire-report-enclosed-trimStackTrace/surefire-reports/TEST-surefire.MyTest-enclosed-trimStackTrace.xml": 1,  # noqa: E501
    "apache__maven-surefire/maven-surefire-report-plugin/src/test/resources/unit/surefire-report-nestedClass/surefire-reports/TEST-surefire.MyTest-nestedClass.xml": 1,  # noqa: E501
    "apache__maven-surefire/maven-surefire-report-plugin/src/test/resources/unit/surefire-report-nestedClass-trimStackTrace/surefire-reports/TEST-surefire.MyTest-nestedClass-trimStackTrace.xml": 1,  # noqa: E501
    "apache__maven-surefire/maven-surefire-report-plugin/src/test/resources/unit/surefire-report-single-error/surefire-reports/TEST-surefire.MyTest.xml": 1,  # noqa: E501
    "apache__maven-surefire/surefire-its/src/test/resources/surefire-570-multipleReportDirectories/module1/src/test/resources/surefire-reports2/TEST-org.apache.maven.surefireReport.surefireReportTest.MyClassTest.xml": 2,  # noqa: E501
    "apache__maven-surefire/surefire-its/src/test/resources/surefire-570-multipleReportDirectories/module1/src/test/resources/surefire-reports2/org.apache.maven.surefireReport.surefireReportTest.MyClassTest.txt": "durations-missing",  # noqa: E501
    "apache__maven-surefire/surefire-its/src/test/resources/surefire-740-comma-truncated/persistent-reports/TEST-junit.twoTestCases.BasicTest.xml": 1,  # noqa: E501
    "apache__maven-surefire/surefire-its/src/test/resources/surefire-740-comma-truncated/persistent-reports/TEST-junit.twoTestCases.TestTwo.xml": 1,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/TEST-org.acme.FlakyTest.xml": 2,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/TEST-org.apache.maven.surefire.test.FailingTest.xml": 2,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/TEST-surefire.MyTest-enclosed-trimStackTrace.xml": 1,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/TEST-surefire.MyTest-enclosed.xml": 1,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/TEST-surefire.MyTest-nestedClass-trimStackTrace.xml": 1,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/TEST-surefire.MyTest-nestedClass.xml": 1,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/TEST-surefire.MyTest.xml": 1,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/failsafe-summary-old.xml": "not-junit",  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/fixture/testsuitexmlparser/failsafe-summary.xml": "not-junit",  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/test-reports/TEST-AntUnit.xml": 1,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/test-reports/TEST-NoPackageTest.xml": 3,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/test-reports/TEST-NoTimeTestCaseTest.xml": 8,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/test-reports/TEST-classWithNoTests.NoMethodsTestCase.xml": 0,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/test-reports/TEST-com.shape.CircleTest.xml": 8,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/test-reports/TEST-com.shape.PointTest.xml": 3,  # noqa: E501
    "apache__maven-surefire/surefire-report-parser/src/test/resources/test-reports/TEST-junit.twoTestCaseSuite.WrapperTestSuite.xml": 2,  # noqa: E501
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
    "dorny__test-reporter/__tests__/fixtures/dotnet-nunit.xml": "not-junit",
    "dorny__test-reporter/__tests__/fixtures/dotnet-trx.trx": "not-junit",
    "dorny__test-reporter/__tests__/fixtures/dotnet-xunitv3.trx": "not-junit",
    "dorny__test-reporter/__tests__/fixtures/empty/dart-json.json": "json-malformed",
    "dorny__test-reporter/__tests__/fixtures/empty/dotnet-trx-empty-test-definitions.trx": "not-junit",  # noqa: E501
    "dorny__test-reporter/__tests__/fixtures/empty/dotnet-trx.trx": "not-junit",
    "dorny__test-reporter/__tests__/fixtures/empty/java-junit.xml": 0,
    "dorny__test-reporter/__tests__/fixtures/empty/jest-junit-empty-testsuite.xml": 0,
    "dorny__test-reporter/__tests__/fixtures/empty/jest-junit.xml": 0,
    "dorny__test-reporter/__tests__/fixtures/empty/mocha-json.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/empty/phpunit-empty.xml": 0,
    "dorny__test-reporter/__tests__/fixtures/empty/rspec-json.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/external/FluentValidation.Tests.trx": "not-junit",
    "dorny__test-reporter/__tests__/fixtures/external/SilentNotes.trx": "not-junit",
    "dorny__test-reporter/__tests__/fixtures/external/flutter/files.txt": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/external/flutter/provider-test-results.json": "json-malformed",  # noqa: E501
    "dorny__test-reporter/__tests__/fixtures/external/java/TEST-org.apache.pulsar.AddMissingPatchVersionTest.xml": 1,  # MANIFEST 2: repeated testcases collapse  # noqa: E501
    "dorny__test-reporter/__tests__/fixtures/external/java/empty_failures.xml": 3,
    "dorny__test-reporter/__tests__/fixtures/external/java/files.txt": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/external/java/junit4-basic.xml": 6,
    "dorny__test-reporter/__tests__/fixtures/external/java/junit4-complete.xml": 8,
    "dorny__test-reporter/__tests__/fixtures/external/java/pulsar-test-report.xml": 670,  # MANIFEST 808: repeated testcases collapse  # noqa: E501
    "dorny__test-reporter/__tests__/fixtures/external/jest/files.txt": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/external/jest/jest-react-component-test-results.xml": 1,  # noqa: E501
    "dorny__test-reporter/__tests__/fixtures/external/jest/jest-test-results.xml": 4142,  # MANIFEST 4239: repeated testcases collapse  # noqa: E501
    "dorny__test-reporter/__tests__/fixtures/external/mocha/files.txt": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/external/mocha/mocha-test-results.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/external/nunit-sample.xml": "not-junit",
    "dorny__test-reporter/__tests__/fixtures/external/phpunit/junit-basic.xml": 9,
    "dorny__test-reporter/__tests__/fixtures/external/phpunit/phpcheckstyle-phpunit.xml": 30,
    "dorny__test-reporter/__tests__/fixtures/golang-json.json": "json-malformed",
    "dorny__test-reporter/__tests__/fixtures/jest-junit-eslint.xml": 1,
    "dorny__test-reporter/__tests__/fixtures/jest-junit.xml": 6,
    "dorny__test-reporter/__tests__/fixtures/junit-with-message.xml": 1,
    "dorny__test-reporter/__tests__/fixtures/mocha-json.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/nette-tester/BootstrapFormRenderer-report.xml": 4,
    "dorny__test-reporter/__tests__/fixtures/nette-tester/tester-v1.7-report.xml": 65,
    "dorny__test-reporter/__tests__/fixtures/phpunit/phpunit-paths.xml": 6,
    "dorny__test-reporter/__tests__/fixtures/phpunit/phpunit.xml": 12,
    "dorny__test-reporter/__tests__/fixtures/python-xunit-pytest.xml": 10,
    "dorny__test-reporter/__tests__/fixtures/python-xunit-unittest.xml": 8,
    "dorny__test-reporter/__tests__/fixtures/rspec-json.json": "json-schema",
    "dorny__test-reporter/__tests__/fixtures/swift-xunit.xml": 3,
    "dorny__test-reporter/__tests__/fixtures/test-errors/jest/files.txt": "durations-missing",
    "dorny__test-reporter/__tests__/fixtures/test-errors/jest/jest-test-results.xml": 2,
    "gotestyourself__gotestsum/internal/junitxml/testdata/junitxml-report-hide-skipped-tests.golden": 55,  # noqa: E501
    "gotestyourself__gotestsum/internal/junitxml/testdata/junitxml-report-skip-empty.golden": 60,
    "gotestyourself__gotestsum/internal/junitxml/testdata/junitxml-report-tc-with-attributes.golden": 1,  # noqa: E501
    "gotestyourself__gotestsum/internal/junitxml/testdata/junitxml-report.golden": 60,
    "inorton__junit2html/tests/junit-axis-linux.xml": 3,
    "inorton__junit2html/tests/junit-axis-solaris.xml": 3,
    "inorton__junit2html/tests/junit-axis-windows.xml": 3,
    "inorton__junit2html/tests/junit-complex_suites.xml": 469,  # MANIFEST 685: repeated testcases collapse  # noqa: E501
    "inorton__junit2html/tests/junit-cute2.xml": 37,  # MANIFEST 43: repeated testcases collapse
    "inorton__junit2html/tests/junit-jenkins-stdout.xml": 1,
    "inorton__junit2html/tests/junit-report-6700.xml": 0,
    "inorton__junit2html/tests/junit-simple_suite.xml": 1,
    "inorton__junit2html/tests/junit-simple_suites.xml": 1,
    "inorton__junit2html/tests/junit-sonobouy.xml": 705,  # MANIFEST 710: repeated testcases collapse  # noqa: E501
    "inorton__junit2html/tests/junit-testrun.xml": "not-junit",
    "inorton__junit2html/tests/junit-unicode.xml": 2,
    "inorton__junit2html/tests/junit-unicode2.xml": 1,
    "inorton__junit2html/tests/pytest-binary-names.xml": 1,
    "jstemmer__go-junit-report/testdata/001-pass-fail-skip.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/001-report.xml": 5,
    "jstemmer__go-junit-report/testdata/005-no-xml-header.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/005-report.xml": 2,
    "jstemmer__go-junit-report/testdata/007-compiled_test.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/007-report.xml": 2,
    "jstemmer__go-junit-report/testdata/008-parallel.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/008-report.xml": 3,
    "jstemmer__go-junit-report/testdata/009-coverage.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/009-report.xml": 2,
    "jstemmer__go-junit-report/testdata/010-multipkg-coverage.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/010-report.xml": 3,
    "jstemmer__go-junit-report/testdata/011-go_1_5.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/011-report.xml": 2,
    "jstemmer__go-junit-report/testdata/012-report.xml": 11,
    "jstemmer__go-junit-report/testdata/012-subtests.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/013-report.xml": 5,
    "jstemmer__go-junit-report/testdata/013-syntax-error.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/014-panic.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/014-report.xml": 2,
    "jstemmer__go-junit-report/testdata/015-empty.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/015-report.xml": 0,
    "jstemmer__go-junit-report/testdata/016-repeated-names.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/016-report.xml": 1,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "jstemmer__go-junit-report/testdata/017-race.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/017-report.xml": 1,
    "jstemmer__go-junit-report/testdata/018-coverpkg.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/018-report.xml": 3,
    "jstemmer__go-junit-report/testdata/019-pass.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/019-report.xml": 2,
    "jstemmer__go-junit-report/testdata/021-cached.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/021-report.xml": 1,
    "jstemmer__go-junit-report/testdata/022-bench.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/022-report.xml": 3,
    "jstemmer__go-junit-report/testdata/023-benchmem.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/023-report.xml": 2,
    "jstemmer__go-junit-report/testdata/024-benchtests.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/024-report.xml": 2,
    "jstemmer__go-junit-report/testdata/025-benchcount.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/025-report.xml": 2,
    "jstemmer__go-junit-report/testdata/026-report.xml": 6,
    "jstemmer__go-junit-report/testdata/026-testbenchmultiple.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/027-benchdecimal.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/027-report.xml": 3,
    "jstemmer__go-junit-report/testdata/028-bench-1cpu.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/028-report.xml": 1,
    "jstemmer__go-junit-report/testdata/029-bench-16cpu.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/029-report.xml": 1,
    "jstemmer__go-junit-report/testdata/030-report.xml": 17,
    "jstemmer__go-junit-report/testdata/030-stdout.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/031-report.xml": 5,
    "jstemmer__go-junit-report/testdata/031-syntax-error-test-binary.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/032-failed-summary.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/032-report.xml": 2,
    "jstemmer__go-junit-report/testdata/033-bench-mb.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/033-report.xml": 2,
    "jstemmer__go-junit-report/testdata/034-notest.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/034-report.xml": 0,
    "jstemmer__go-junit-report/testdata/035-report.xml": 9,
    "jstemmer__go-junit-report/testdata/035-whitespace.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/036-benchfail.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/036-report.xml": 3,
    "jstemmer__go-junit-report/testdata/037-legacy-fail.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/037-report.xml": 2,
    "jstemmer__go-junit-report/testdata/038-report.xml": 1,
    "jstemmer__go-junit-report/testdata/038-test-pkg-name.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/039-no-properties.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/039-report.xml": 1,
    "jstemmer__go-junit-report/testdata/100-pass.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/100-report.xml": 1,
    "jstemmer__go-junit-report/testdata/101-fail.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/101-report.xml": 2,
    "jstemmer__go-junit-report/testdata/102-broken.gojson.txt": "durations-missing",
    "jstemmer__go-junit-report/testdata/102-report.xml": 1,
    "jstemmer__go-junit-report/testdata/103-report.xml": 4,
    "jstemmer__go-junit-report/testdata/103-subtests.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/104-race.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/104-report.xml": 1,
    "jstemmer__go-junit-report/testdata/105-panic.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/105-report.xml": 1,
    "jstemmer__go-junit-report/testdata/106-report.xml": 3,
    "jstemmer__go-junit-report/testdata/106-testmain.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/107-report.xml": 2,
    "jstemmer__go-junit-report/testdata/107-skip.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/108-paniclate.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/108-report.xml": 2,
    "jstemmer__go-junit-report/testdata/109-bench.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/109-report.xml": 4,
    "jstemmer__go-junit-report/testdata/110-benchfail.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/110-report.xml": 3,
    "jstemmer__go-junit-report/testdata/111-empty.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/111-report.xml": 0,
    "jstemmer__go-junit-report/testdata/112-parallel.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/112-report.xml": 3,
    "jstemmer__go-junit-report/testdata/113-race.gojson.txt": "json-malformed",
    "jstemmer__go-junit-report/testdata/113-report.xml": 2,
    "launchableinc__cli/tests/data/ant/junitreport/TEST-com.launchable.HelloWorldTest.xml": 2,
    "launchableinc__cli/tests/data/ant/junitreport/TEST-com.launchable.library.CacheTest.xml": 1,
    "launchableinc__cli/tests/data/ant/junitreport/TESTS-TestSuites.xml": 3,
    "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/mylib_test1/test.xml": 1,  # noqa: E501
    "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/mylib_test2/test.xml": 1,  # noqa: E501
    "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/mylib_test3/test.xml": 1,  # noqa: E501
    "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/mylib_test4/test.xml": 1,  # noqa: E501
    "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/mylib_test5/test.xml": 1,  # noqa: E501
    "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/mylib_test6/test.xml": 1,  # noqa: E501
    "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/mylib_test7/test.xml": 1,  # noqa: E501
    "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/mylib_test8/test.xml": 1,  # noqa: E501
    "launchableinc__cli/tests/data/bazel/bazel-testlogs/src/test/java/com/ninjinkun/mylib_test9/test.xml": 1,  # noqa: E501
    "launchableinc__cli/tests/data/behave/reports/report.xml": 1,
    "launchableinc__cli/tests/data/broken_xml/broken.xml": "durations-missing",
    "launchableinc__cli/tests/data/broken_xml/normal.xml": 1,
    "launchableinc__cli/tests/data/ctest/Testing/latest/Test.xml": "not-junit",
    "launchableinc__cli/tests/data/cts/test_result.xml": "not-junit",
    "launchableinc__cli/tests/data/cucumber/report/TEST-features-foo-bar.xml": 1,
    "launchableinc__cli/tests/data/cucumber/report/TEST-features-foo-is_it_friday_yet.xml": 6,
    "launchableinc__cli/tests/data/cucumber/report/TEST-features-is_it_friday_yet.xml": 6,
    "launchableinc__cli/tests/data/cucumber/report/dummy.xml": "empty-report",
    "launchableinc__cli/tests/data/cypress/empty.xml": 0,
    "launchableinc__cli/tests/data/cypress/test-result.xml": 3,
    "launchableinc__cli/tests/data/dotnet/test-result.xml": "not-junit",
    "launchableinc__cli/tests/data/go_test/reportv1/reportv1.xml": 9,
    "launchableinc__cli/tests/data/go_test/reportv2/reportv2.xml": 9,
    "launchableinc__cli/tests/data/googletest/fail/output.xml": 3,
    "launchableinc__cli/tests/data/googletest/output_a.xml": 3,
    "launchableinc__cli/tests/data/googletest/output_b.xml": 3,
    "launchableinc__cli/tests/data/gradle/recursion/foo/bar/reports/1.xml": 4,
    "launchableinc__cli/tests/data/jest/junit.xml": 10,
    "launchableinc__cli/tests/data/maven/reports/TEST-1.xml": 1,
    "launchableinc__cli/tests/data/maven/reports/TEST-2.xml": 2,
    "launchableinc__cli/tests/data/maven/reports/TEST-nested.xml": 1,
    "launchableinc__cli/tests/data/maven/reports/dummy.xml": "not-junit",
    "launchableinc__cli/tests/data/minitest/TEST-Admin_UserTest.xml": 2,
    "launchableinc__cli/tests/data/minitest/TEST-Admin_UserTest_ChildlenTest.xml": 1,
    "launchableinc__cli/tests/data/minitest/TEST-UserControllerTest.xml": 2,
    "launchableinc__cli/tests/data/minitest/TEST-UserCopyTest.xml": 2,
    "launchableinc__cli/tests/data/minitest/TEST-UserTest.xml": 1,
    "launchableinc__cli/tests/data/nunit/list.xml": "not-junit",
    "launchableinc__cli/tests/data/nunit/nunit-reporter-bug-with-nested-type.xml": "not-junit",
    "launchableinc__cli/tests/data/nunit/output-linux.xml": "not-junit",
    "launchableinc__cli/tests/data/nunit/output-windows.xml": "not-junit",
    "launchableinc__cli/tests/data/playwright/report.xml": 93,
    "launchableinc__cli/tests/data/prove/report.xml": 7,
    "launchableinc__cli/tests/data/pytest/report.xml": 12,
    "launchableinc__cli/tests/data/robot/dryrun.xml": "not-junit",
    "launchableinc__cli/tests/data/robot/output.xml": "not-junit",
    "launchableinc__cli/tests/data/robot/single-output.xml": "not-junit",
    "launchableinc__cli/tests/data/rspec/rspec.xml": 16,
    "launchableinc__cli/tests/data/vitest/report.xml": 5,
    "launchableinc__cli/tests/data/xctest/junit.xml": 6,  # MANIFEST 9: repeated testcases collapse
    "mikepenz__action-junit-report/test_results/catch2/report.xml": 1,
    "mikepenz__action-junit-report/test_results/container-structure/test.xml": 3,
    "mikepenz__action-junit-report/test_results/corrupt-junit/e2e-tests/corrupt/target/sf-reports/TEST-test.CorruptTest.xml": "xml-truncated",  # noqa: E501
    "mikepenz__action-junit-report/test_results/cunit/testEmpty.xml": 0,
    "mikepenz__action-junit-report/test_results/cunit/testFailure.xml": 4,
    "mikepenz__action-junit-report/test_results/flaky_retries/flaky_all_failures.xml": 1,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "mikepenz__action-junit-report/test_results/flaky_retries/flaky_success_first.xml": 1,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "mikepenz__action-junit-report/test_results/flaky_retries/flaky_with_classname_file.xml": 3,  # MANIFEST 5: repeated testcases collapse  # noqa: E501
    "mikepenz__action-junit-report/test_results/issues/testDisabled.xml": 22,
    "mikepenz__action-junit-report/test_results/issues/testFailedDisabled.xml": 1,
    "mikepenz__action-junit-report/test_results/junit-server-test/report.xml": 3,  # MANIFEST 4: repeated testcases collapse  # noqa: E501
    "mikepenz__action-junit-report/test_results/junit-web-test/expected.xml": "xml-malformed",
    "mikepenz__action-junit-report/test_results/junit-web-test/expectedRetries.xml": "xml-malformed",  # noqa: E501
    "mikepenz__action-junit-report/test_results/junit_flaky_failure/marathon_junit_report.xml": 1,
    "mikepenz__action-junit-report/test_results/junit_flaky_failure/mixed_flaky_and_passed.xml": 3,
    "mikepenz__action-junit-report/test_results/marathon_tests/com.mikepenz.DummyTest#test_02_dummy.xml": 1,  # noqa: E501
    "mikepenz__action-junit-report/test_results/marathon_tests/com.mikepenz.DummyTest3#test_01.xml": 1,  # noqa: E501
    "mikepenz__action-junit-report/test_results/marathon_tests/com.mikepenz.DummyUtilTest#test_01_dummy.xml": 1,  # noqa: E501
    "mikepenz__action-junit-report/test_results/maven_surefire_flaky/surefire-report.xml": 1,
    "mikepenz__action-junit-report/test_results/mocha/mocha.xml": 1,
    "mikepenz__action-junit-report/test_results/multiple/test_10.xml": 3,
    "mikepenz__action-junit-report/test_results/multiple/test_11.xml": 3,
    "mikepenz__action-junit-report/test_results/multiple/test_12.xml": 3,
    "mikepenz__action-junit-report/test_results/multiple_failures/test_multiple_errors.xml": 3,
    "mikepenz__action-junit-report/test_results/multiple_failures/test_multiple_failures.xml": 4,
    "mikepenz__action-junit-report/test_results/nested/junit.xml": 5,
    "mikepenz__action-junit-report/test_results/nested/multi-level.xml": 3,
    "mikepenz__action-junit-report/test_results/nextest/basic.xml": 3,
    "mikepenz__action-junit-report/test_results/perl/result.xml": 1,
    "mikepenz__action-junit-report/test_results/python/report.xml": 3,
    "mikepenz__action-junit-report/test_results/python/report_flaky.xml": 4,
    "mikepenz__action-junit-report/test_results/tests/email/pom.xml": "not-junit",
    "mikepenz__action-junit-report/test_results/tests/email/target/surefire-reports/TEST-action.surefire.report.email.EmailAddressTest.xml": 9,  # noqa: E501
    "mikepenz__action-junit-report/test_results/tests/pom.xml": "not-junit",
    "mikepenz__action-junit-report/test_results/tests/utils/pom.xml": "not-junit",
    "mikepenz__action-junit-report/test_results/tests/utils/target/surefire-reports/TEST-action.surefire.report.calc.AllOkTest.xml": 1,  # noqa: E501
    "mikepenz__action-junit-report/test_results/tests/utils/target/surefire-reports/TEST-action.surefire.report.calc.CalcUtilsTest.xml": 2,  # noqa: E501
    "mikepenz__action-junit-report/test_results/tests/utils/target/surefire-reports/TEST-action.surefire.report.calc.StringUtilsTest.xml": 5,  # noqa: E501
    "mikepenz__action-junit-report/test_results/xunit/report.xml": 4,
    "mikepenz__action-junit-report/test_results/xunit/report_fl_on_f.xml": 4,
    "nextest-rs__quick-junit/crates/quick-junit-tests/tests/fixtures/basic_report.xml": 8,
    "semaphoreci__test-results/priv/merging/out.json": "json-schema",
    "semaphoreci__test-results/priv/merging/pipeline/job1/junit.json": "json-schema",
    "semaphoreci__test-results/priv/merging/pipeline/job1/junit.xml": 3,
    "semaphoreci__test-results/priv/merging/pipeline/job2/junit.json": "json-schema",
    "semaphoreci__test-results/priv/merging/pipeline/job2/junit.xml": 2,
    "semaphoreci__test-results/priv/merging/pipeline/job3/junit.json": "json-schema",
    "semaphoreci__test-results/priv/merging/pipeline/job3/junit.xml": 3,
    "semaphoreci__test-results/priv/parsers/embedded/in.xml": 7,
    "semaphoreci__test-results/priv/parsers/embedded/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/exunit/in.xml": 3,
    "semaphoreci__test-results/priv/parsers/exunit/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/generic/in.xml": 6,
    "semaphoreci__test-results/priv/parsers/generic/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/golang/in.xml": 77,
    "semaphoreci__test-results/priv/parsers/golang/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/phpunit/in.xml": 5,
    "semaphoreci__test-results/priv/parsers/phpunit/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/rspec/in.xml": 4,
    "semaphoreci__test-results/priv/parsers/rspec/out.json": "json-schema",
    "semaphoreci__test-results/priv/parsers/stdout/in.xml": 2,  # MANIFEST 3: repeated testcases collapse  # noqa: E501
    "semaphoreci__test-results/priv/parsers/stdout/out.json": "json-schema",
    "test-summary__action/test/resources/junit/01-common.xml": 6,  # MANIFEST 8: repeated testcases collapse  # noqa: E501
    "test-summary__action/test/resources/junit/02-example.xml": 29,  # MANIFEST 30: repeated testcases collapse  # noqa: E501
    "test-summary__action/test/resources/junit/03-junit.xml": 10,
    "test-summary__action/test/resources/junit/04-bazel-junit.xml": 2,
    "test-summary__action/test/resources/junit/05-empty.xml": 0,
    "test-summary__action/test/resources/junit/06-empty.xml": 0,
    "test-summary__action/test/resources/junit/07-no-failure-message.xml": 10,
    "test-summary__action/test/resources/junit/08-failure-noattr-only-innertext.xml": 1,
    "trunk-io__analytics-cli/cli/test_fixtures/junit0_fail.xml": 1,
    "trunk-io__analytics-cli/cli/test_fixtures/junit0_fail_suite_timestamp.xml": 1,
    "trunk-io__analytics-cli/cli/test_fixtures/junit0_pass.xml": 1,
    "trunk-io__analytics-cli/cli/test_fixtures/junit0_pass_suite_timestamp.xml": 1,
    "trunk-io__analytics-cli/cli/test_fixtures/junit1_fail.xml": 2,
    "trunk-io__analytics-cli/cli/test_fixtures/junit1_pass.xml": 2,
    "trunk-io__analytics-cli/xcresult/tests/data/test-ExpectedFailures.junit.xml": 52,
    "trunk-io__analytics-cli/xcresult/tests/data/test-swift-mix.junit.xml": 4,
    "trunk-io__analytics-cli/xcresult/tests/data/test-swift-snapshot-testing.junit.xml": 1,
    "trunk-io__analytics-cli/xcresult/tests/data/test-swift-without-test-suites.junit.xml": 2,
    "trunk-io__analytics-cli/xcresult/tests/data/test1.junit.xml": 17,
    "trunk-io__analytics-cli/xcresult/tests/data/test4.junit.xml": 452,
    "weiwei__junitparser/tests/data/jenkins.xml": 3,
    "weiwei__junitparser/tests/data/no_fails.xml": 3,
    "weiwei__junitparser/tests/data/no_suites_tag.xml": 3,
    "weiwei__junitparser/tests/data/normal.xml": 3,
    "weiwei__junitparser/tests/data/pytest_error.xml": 1,
    "weiwei__junitparser/tests/data/pytest_success.xml": 1,
}


def corpus_files() -> list[str]:
    return sorted(str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*") if p.is_file())


def test_table_covers_the_whole_corpus() -> None:
    assert corpus_files() == sorted(EXPECTED)


@pytest.mark.parametrize("rel", corpus_files())
def test_corpus_file(rel: str) -> None:
    expected = EXPECTED[rel]
    data = (CORPUS / rel).read_bytes()
    if isinstance(expected, str):
        with pytest.raises(ReportParseError) as caught:
            parse_report(data, filename=rel)
        assert caught.value.code == expected
        assert caught.value.filename == rel
        return
    report = parse_report(data, filename=rel)
    frame = report.results
    assert len(frame) == expected
    assert tuple(frame.columns) == RESULT_COLUMNS
    assert frame["duration_s"].dtype == "float64"
    assert frame["attempts"].dtype == "int64"
    assert frame["flaky"].dtype == "bool"
    assert frame["nodeid"].is_unique
    assert set(frame["outcome"]) <= {"passed", "failed", "error", "skipped"}
    assert not (frame["duration_s"] < 0).any()
