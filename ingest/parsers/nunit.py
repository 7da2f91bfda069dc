"""NUnit 3 (`<test-run>`) and NUnit 2 (`<test-results>`) XML -> ParsedReport.

NUnit 3 writes `classname`, `methodname`, `result` (+ `label`) and `duration` on each
`<test-case>`; NUnit 2 writes the full name, `result`/`executed` and `time`. Parameterized
tests and theories are one `<test-case>` per case, each kept as its own test.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ingest.model import ParsedReport, SessionInfo
from ingest.parsers.dotnet_rows import (
    DotnetRow,
    build_report,
    class_of,
    message_text,
    split_theory,
)
from ingest.parsers.junit_times import wall_s
from ingest.parsers.xml_tree import parse_tree

_V3_OUTCOME = {
    "passed": "passed",
    "warning": "passed",
    "failed": "failed",
    "skipped": "skipped",
    "ignored": "skipped",
    "inconclusive": "skipped",
}
# NUnit 3 `label` of a Failed result that is an error, not an assertion failure.
_V3_ERROR_LABELS = frozenset({"error", "cancelled", "invalid"})
_V2_OUTCOME = {
    "success": "passed",
    "failure": "failed",
    "error": "error",
    "ignored": "skipped",
    "skipped": "skipped",
    "notrunnable": "skipped",
    "inconclusive": "skipped",
    "cancelled": "skipped",
}


def parse_nunit(data: bytes, *, filename: str | None = None) -> ParsedReport:
    """Parse NUnit 2 or 3 XML; hostile or foreign XML raises ReportParseError."""
    root = parse_tree(
        data, filename=filename, roots=("test-run", "test-results"), kind="an NUnit report"
    )
    v3 = root.tag == "test-run"
    rows: list[DotnetRow] = []
    _walk(root, None, v3, rows)
    session = SessionInfo(
        started_at=root.get("start-time") if v3 else None,
        wall_s=wall_s(root.get("duration") or root.get("time")),
    )
    return build_report(rows, "nunit", session, [])


def _walk(element: ET.Element, assembly: str | None, v3: bool, rows: list[DotnetRow]) -> None:
    for child in element:
        if child.tag == "test-suite":
            is_assembly = child.get("type") == "Assembly"
            name = child.get("name")
            _walk(child, name if is_assembly and name else assembly, v3, rows)
        elif child.tag == "results":  # NUnit 2 nests children under <results>
            _walk(child, assembly, v3, rows)
        elif child.tag == "test-case":
            rows.append(_v3_row(child, assembly) if v3 else _v2_row(child, assembly))


def _message(case: ET.Element) -> str | None:
    for path in ("failure/message", "reason/message"):
        found = case.find(path)
        if found is not None and (found.text or "").strip():
            return message_text(found.text)
    return None


def _v3_row(case: ET.Element, assembly: str | None) -> DotnetRow:
    result = (case.get("result") or "").lower()
    outcome = _V3_OUTCOME.get(result, "passed")
    if outcome == "failed" and (case.get("label") or "").lower() in _V3_ERROR_LABELS:
        outcome = "error"
    if not result:  # a listing (`--explore`): the test was not run
        outcome = "skipped"
    name = case.get("name") or ""
    fullname = case.get("fullname") or name
    # The fullname is the qualified class plus the name; some loggers write a short
    # `classname` ("Test" for "Launchable.NUnit.Test.Outer+Inner"), so it comes second.
    if name and fullname.endswith("." + name):
        classname: str | None = fullname[: -len(name) - 1]
    else:
        classname = case.get("classname") or class_of(fullname)
    method = case.get("methodname")
    return DotnetRow(
        classname=classname,
        name=name or fullname,
        method=split_theory(method)[0].rsplit(".", 1)[-1] if method else None,
        outcome=outcome,
        time=case.get("duration") or case.get("time"),
        suite=assembly,
        message=_message(case),
    )


def _v2_row(case: ET.Element, assembly: str | None) -> DotnetRow:
    result = (case.get("result") or "").lower()
    outcome = _V2_OUTCOME.get(result, "passed")
    if case.get("executed", "True").lower() == "false":
        outcome = "skipped"
    fullname = case.get("name") or ""
    return DotnetRow(
        classname=class_of(fullname),
        name=fullname,
        method=None,
        outcome=outcome,
        time=case.get("time"),
        suite=assembly,
        message=_message(case),
    )
