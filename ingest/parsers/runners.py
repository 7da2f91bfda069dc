"""Which test runner wrote a report, and the unit that runner can select
(docs/runners.md).

Every result's `file` is the runner's selection unit, the thing a CI job can be told to run
and the "file" dimension rolls up: the source file where the producer writes one, the test
class (Java, .NET), the Go package, the nextest binary, the Catch2/CTest/GoogleTest suite or
the Bazel target. `docs/runners.md` states the rule per runner; RUNNERS is the registry a
test checks against that page.

Detection reads the producer's fingerprints: the root `<testsuites name=...>` Jest, Vitest and
nextest write, go-junit-report's `go.version` property, Surefire's schema and properties,
Catch2's `hostname="tbd"`, file extensions, the shape of class names. `--runner` (CLI) and the
upload form field `runner` override it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from xml.sax.saxutils import unescape

import numpy as np
import pandas as pd

from ingest.model import ParsedReport, ReportParseError

__all__ = ["RUNNERS", "Runner", "detect_runner", "with_runner"]


@dataclass(frozen=True)
class Runner:
    """A test runner: what it selects by, and how its reports are recognised (for docs)."""

    unit: str  # "file" | "class" | "package" | "binary" | "suite" | "target"
    description: str


RUNNERS: dict[str, Runner] = {
    "pytest": Runner("file", "pytest (JUnit XML, --durations text, laptime JSON)"),
    "jest": Runner("file", "Jest with jest-junit"),
    "vitest": Runner("file", "Vitest's junit reporter"),
    "playwright": Runner("file", "Playwright's junit reporter"),
    "cypress": Runner("file", "Cypress with mocha-junit-reporter"),
    "mocha": Runner("file", "Mocha with mocha-junit-reporter"),
    "rspec": Runner("file", "RSpec with rspec_junit_formatter"),
    "phpunit": Runner("file", "PHPUnit --log-junit"),
    "go": Runner("package", "go test via go-junit-report or gotestsum"),
    "maven": Runner("class", "Maven Surefire/Failsafe (JUnit 4/5, TestNG)"),
    "gradle": Runner("class", "Gradle's test task (JUnit 4/5, TestNG)"),
    "nextest": Runner("binary", "cargo-nextest"),
    "catch2": Runner("suite", "Catch2's JUnit reporter"),
    "ctest": Runner("suite", "CTest --output-junit"),
    "gtest": Runner("suite", "GoogleTest --gtest_output=xml"),
    "bazel": Runner("target", "bazel test (test.xml under bazel-testlogs)"),
    "dotnet": Runner("class", "dotnet test: NUnit 2/3 XML, TRX, xUnit, JUnit loggers"),
    "generic": Runner("file", "anything else: file, else class, else suite"),
}

# A Java qualified class name following the package convention: lower-case package parts,
# then a class starting with an upper-case letter.
_JAVA_CLASS = re.compile(r"^(?:[a-z_][\w]*\.)*[A-Z][\w$]*$")
_JAVA_LIKE = re.compile(r"^(?:[a-z_][\w]*\.)+[A-Z][\w$]*(?:\(.*\))?$")
_GO_TEST = re.compile(r"^(?:Test|Benchmark|Example|Fuzz)")
_BAZEL_LOG = re.compile(r"(?:^|/)bazel-testlogs/(.+)/([^/]+)/test\.xml$")
_HEAD_BYTES = 65536

# (runner, words one of which the match must contain, regex on the report's first bytes),
# first match wins. The words are looked for first: a substring test costs far less than a
# regex over 64 KiB, and most reports hold none of them.
_FINGERPRINTS: tuple[tuple[str, tuple[str, ...], re.Pattern[str]], ...] = (
    ("jest", ("jest tests",), re.compile(r"<testsuites\b[^>]*\bname=[\"']jest tests[\"']")),
    (
        "vitest",
        ("vitest tests",),
        re.compile(r"<testsuites\b[^>]*\bname=[\"']vitest tests[\"']"),
    ),
    (
        "nextest",
        ("nextest-run",),
        re.compile(r"<testsuites\b[^>]*\bname=[\"']nextest-run[\"']"),
    ),
    ("playwright", ('id=""',), re.compile(r"<testsuites\s+id=\"\"\s+name=\"\"")),
    ("go", ("go.version",), re.compile(r"<property\s+name=[\"']go\.version[\"']")),
    ("gtest", ("AllTests",), re.compile(r"<testsuites\b[^>]*\bname=[\"']AllTests[\"']")),
    ("catch2", ("tbd",), re.compile(r"<testsuite\b[^>]*\bhostname=[\"']tbd[\"']")),
    (
        "maven",
        ("surefire", "maven."),
        re.compile(r"maven\.apache\.org/surefire|<property\s+name=[\"'](?:surefire|maven)\."),
    ),
    ("rspec", ("rspec",), re.compile(r"<testsuite\b[^>]*\bname=[\"']rspec[\"']")),
    ("bazel", ("Executing tests from //",), re.compile(r"Executing tests from //")),
)
_CYPRESS_FILE = re.compile(r"\bfile=[\"'][^\"']*cypress/")
# Surefire and Ant name their reports TEST-<class>.xml.
_SUREFIRE_FILE = re.compile(r"(?:^|/)TEST-[^/]+\.xml$")


def detect_runner(report: ParsedReport, head: bytes, filename: str | None = None) -> str:
    """The runner that most likely wrote `report` (a RUNNERS key; "generic" when unsure)."""
    if report.format in ("durations", "laptime-json"):
        return "pytest"
    if report.runner != "generic":
        return report.runner  # a native format's parser knows (NUnit, TRX)
    text = head[:_HEAD_BYTES].decode("utf-8", "replace")
    for name, words, pattern in _FINGERPRINTS:
        if any(word in text for word in words) and pattern.search(text):
            return name
    path = (filename or "").replace("\\", "/")
    if _BAZEL_LOG.search(path):
        return "bazel"
    if (
        _SUREFIRE_FILE.search(path)
        and report.results["suite"].dropna().astype(str).str.match(_JAVA_CLASS).all()
    ):
        return "maven"
    frame = report.results
    # Plain str methods that stop at the first match: a pandas .str pass costs more per report.
    files = [f for f in frame["file"].tolist() if isinstance(f, str)]
    if any(f.endswith(".py") for f in files) or "pytest" in frame["suite"].tolist():
        return "pytest"
    if "Mocha Tests" in text:
        return "cypress" if _CYPRESS_FILE.search(text) else "mocha"
    if any(f.endswith((".php", ".phpt")) for f in files):
        return "phpunit"
    if any(f.endswith("_spec.rb") for f in files):
        return "rspec"
    return _from_names(frame, path)


def _from_names(frame: pd.DataFrame, path: str) -> str:
    """Runner guessed from the shape of class and test names when no fingerprint matched."""
    classes = frame["classname"].fillna(frame["suite"]).dropna().astype(str)
    if classes.empty:
        return "generic"
    if classes.str.match(_JAVA_LIKE).mean() > 0.5:
        return "gradle" if "gradle" in path or "build/test-results" in path else "maven"
    functions = frame["function"].dropna().astype(str)
    if (
        classes.str.contains("/", regex=False).mean() > 0.5
        and len(functions)
        and functions.str.match(_GO_TEST).mean() > 0.5
    ):
        return "go"
    return "generic"


def with_runner(
    report: ParsedReport, content: bytes, *, filename: str | None = None, runner: str = "auto"
) -> ParsedReport:
    """`report` (parsed from `content`) with its runner set (detected, or `runner`) and each
    result's `file` the unit that runner selects."""
    if runner != "auto" and runner not in RUNNERS:
        known = ", ".join(["auto", *RUNNERS])
        raise ReportParseError(
            "runner-unknown",
            f"unknown runner {runner!r} (expected one of {known})",
            filename=filename,
        )
    name = detect_runner(report, content[:_HEAD_BYTES], filename) if runner == "auto" else runner
    # Copy-on-write: the columns replaced below never reach report.results.
    results = report.results.copy(deep=False)
    if name in ("mocha", "cypress") and results["file"].isna().any():
        results["file"] = _mocha_files(content, results["file"].to_numpy(dtype=object))
    files, derived = selection_units(results, name, filename)
    results["file"] = files
    session = replace(report.session, runner=name)
    return replace(report, results=results, runner=name, file_derived=derived, session=session)


def selection_units(
    frame: pd.DataFrame, runner: str, filename: str | None = None
) -> tuple[np.ndarray, bool]:
    """Per result the unit `runner` selects, and whether any was derived (a Java path)."""
    unit = RUNNERS[runner].unit
    file = frame["file"].to_numpy(dtype=object)
    classname = frame["classname"].to_numpy(dtype=object)
    suite = frame["suite"].to_numpy(dtype=object)
    if unit == "class":
        classes = _first_known(classname, suite)
        if runner in ("maven", "gradle"):
            return _java_paths(classes)
        return _first_known(classes, file), False
    if unit in ("package", "binary", "suite"):
        return _first_known(suite, classname, file), False
    if unit == "target":
        match = _BAZEL_LOG.search((filename or "").replace("\\", "/"))
        if match:
            target = f"//{match.group(1)}:{match.group(2)}"
            return np.full(len(frame), target, dtype=object), False
        return _first_known(suite, classname, file), False
    return _first_known(file, classname, suite), False


_MOCHA_TAG = re.compile(rb"<testsuite\b([^>]*)>|<testcase\b")
_FILE_ATTR = re.compile(rb"\sfile=(?:\"([^\"]*)\"|'([^']*)')")


def _mocha_files(content: bytes, files: np.ndarray) -> np.ndarray:
    """mocha-junit-reporter (Cypress) writes the spec's `file` on the "Root Suite" only: the
    suites after it, siblings in the XML, belong to that file until the next one names its own.
    Rows are testcases in document order; anything unexpected keeps the parsed files."""
    carried: list[str | None] = []
    current: str | None = None
    for match in _MOCHA_TAG.finditer(content):
        if match.group(1) is not None:
            attr = _FILE_ATTR.search(match.group(1))
            if attr:
                raw = attr.group(1) or attr.group(2) or b""
                current = unescape(raw.decode("utf-8", "replace"))
        else:
            carried.append(current)
    if len(carried) != len(files):
        return files
    return _first_known(files, np.array(carried, dtype=object))


def _first_known(*columns: np.ndarray) -> np.ndarray:
    """Per row, the first column's value that is neither None nor empty."""
    out = columns[0].copy()
    for column in columns[1:]:
        gaps = np.array([not v for v in out], dtype=bool)
        if not gaps.any():
            break
        out[gaps] = column[gaps]
    return out


def _java_paths(classes: np.ndarray) -> tuple[np.ndarray, bool]:
    """`src/test/java/<package path>/<Class>.java` for classes following the convention."""
    cache: dict[object, object] = {}
    derived = False
    out = np.empty(len(classes), dtype=object)
    for i, name in enumerate(classes.tolist()):
        if name not in cache:
            cache[name] = _java_path(name)
        out[i] = cache[name]
        derived = derived or (out[i] is not None and out[i] != name)
    return out, derived


def _java_path(name: object) -> object:
    if not isinstance(name, str) or not name:
        return name
    top = name.split("(", 1)[0].split("$", 1)[0]  # Failsafe's "C(H2)", nested "C$Inner"
    if not _JAVA_CLASS.match(top):
        return name
    return "src/test/java/" + top.replace(".", "/") + ".java"


def java_class_of(path: str) -> str:
    """The class of a derived Java path (`src/test/java/a/B.java` -> `a.B`); else unchanged."""
    if path.startswith("src/test/java/") and path.endswith(".java"):
        return path[len("src/test/java/") : -len(".java")].replace("/", ".")
    return path
