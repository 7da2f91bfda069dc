"""Visual Studio TRX (VSTest: `dotnet test --logger trx`, MSTest, xUnit, NUnit adapters).

Each `<UnitTestResult>` is one execution; its class comes from the `<UnitTest>` definition
with the same `testId` (`<TestMethod className=...>`, assembly qualification dropped).
A data-driven result holding `<InnerResults>` counts its inner results only, so a row's
time is never counted twice. `duration` is `hh:mm:ss.fffffff`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator

from ingest.model import ParsedReport, SessionInfo
from ingest.parsers.dotnet_rows import DotnetRow, build_report, message_text
from ingest.parsers.xml_tree import parse_tree, strip_namespace

_OUTCOME = {
    "passed": "passed",
    "passedbutrunaborted": "passed",
    "warning": "passed",
    "completed": "passed",
    "failed": "failed",
    "error": "error",
    "timeout": "error",
    "aborted": "error",
    "notexecuted": "skipped",
    "inconclusive": "skipped",
    "notrunnable": "skipped",
    "pending": "skipped",
    "disconnected": "error",
}
_TIMESPAN = re.compile(r"^(?:(\d+)\.)?(\d+):(\d+):(\d+(?:\.\d+)?)$")


def timespan_s(raw: str | None) -> str | None:
    """`00:01:02.5000000` (optionally `d.hh:mm:ss`) -> "62.5"; None when absent or invalid."""
    match = _TIMESPAN.match((raw or "").strip())
    if match is None:
        return None
    days, hours, minutes, seconds = match.groups()
    total = int(days or 0) * 86400 + int(hours) * 3600 + int(minutes) * 60 + float(seconds)
    return repr(total)


def parse_trx(data: bytes, *, filename: str | None = None) -> ParsedReport:
    """Parse a TRX file; hostile or foreign XML raises ReportParseError."""
    root = parse_tree(data, filename=filename, roots=("TestRun",), kind="a TRX report")
    classes: dict[str, tuple[str | None, str | None]] = {}
    for element in root.iter():
        if strip_namespace(element.tag) == "UnitTest":
            method = next((c for c in element if strip_namespace(c.tag) == "TestMethod"), None)
            if method is not None:
                cls = (method.get("className") or "").split(",", 1)[0].strip() or None
                classes[element.get("id") or ""] = (cls, method.get("name"))
    results = list(_results(root))
    rows = [_row(result, classes) for result in results]
    times = next((e for e in root if strip_namespace(e.tag) == "Times"), None)
    session = SessionInfo(
        started_at=times.get("start") if times is not None else None,
        hostname=results[0].get("computerName") if results else None,
    )
    return build_report(rows, "trx", session, [])


def _results(root: ET.Element) -> Iterator[ET.Element]:
    """Every leaf UnitTestResult (inner results instead of their data-driven parent)."""
    for section in root:
        if strip_namespace(section.tag) == "Results":
            yield from _leaves(section)


def _leaves(parent: ET.Element) -> Iterator[ET.Element]:
    for element in parent:
        if strip_namespace(element.tag) != "UnitTestResult":
            continue
        inner = next((c for c in element if strip_namespace(c.tag) == "InnerResults"), None)
        if inner is not None and len(inner):
            yield from _leaves(inner)
        else:
            yield element


def _row(result: ET.Element, classes: dict[str, tuple[str | None, str | None]]) -> DotnetRow:
    cls, method = classes.get(result.get("testId") or "", (None, None))
    message = None
    for element in result.iter():
        if strip_namespace(element.tag) == "Message" and (element.text or "").strip():
            message = message_text(element.text)
            break
    return DotnetRow(
        classname=cls,
        name=result.get("testName") or method or "",
        method=method,
        outcome=_OUTCOME.get((result.get("outcome") or "").lower(), "passed"),
        time=timespan_s(result.get("duration")),
        suite=None,
        message=message,
    )
