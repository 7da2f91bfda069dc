"""The test run's closing line from pytest's JUnit XML, for scripts/test.sh.

    summary: 812 passed, 0 failed, 3 skipped (tools missing: maven, python3.9; lint ok, 512s)

Skips whose message starts with "tools missing: NAME" (tests/tools.py) are named, so a machine
without a runner or an old Python says so instead of passing quietly.
"""

from __future__ import annotations

import argparse
import re
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

TOOL = re.compile(r"tools missing: ([^\s(]+)")


@dataclass
class Counts:
    """Outcomes of one pytest run, and the tools its skips said were missing."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    tools_missing: set[str] = field(default_factory=set)


def count(report: Path) -> Counts:
    """Outcomes per testcase of a JUnit XML report (errors count as failed)."""
    root = ET.parse(report).getroot()
    counts = Counts()
    for case in root.iter("testcase"):
        children = {child.tag: child for child in case}
        if "failure" in children or "error" in children:
            counts.failed += 1
        elif "skipped" in children:
            counts.skipped += 1
            message = children["skipped"].get("message") or ""
            found = TOOL.search(message)
            if found:
                counts.tools_missing.add(found.group(1))
        else:
            counts.passed += 1
    # A collection error has no testcase of its own in some pytest versions: take the suites'
    # own totals when they say more failed.
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    declared = sum(int(s.get("errors", 0)) + int(s.get("failures", 0)) for s in suites)
    counts.failed = max(counts.failed, declared)
    return counts


def line(counts: Counts | None, *, lint_ok: bool, seconds: int) -> str:
    """The closing line; `counts` None when pytest wrote no report."""
    lint = "lint ok" if lint_ok else "LINT FAILED"
    if counts is None:
        return f"summary: 0 passed, 1 failed (no test report; {lint}, {seconds}s)"
    tools = ", ".join(sorted(counts.tools_missing)) or "none"
    return (
        f"summary: {counts.passed} passed, {counts.failed} failed, {counts.skipped} skipped "
        f"(tools missing: {tools}; {lint}, {seconds}s)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="pytest's --junitxml file")
    parser.add_argument("--lint", choices=("ok", "failed"), required=True)
    parser.add_argument("--seconds", type=int, required=True)
    args = parser.parse_args(argv)
    try:
        counts: Counts | None = count(args.report)
    except (OSError, ET.ParseError):
        counts = None
    sys.stdout.write(line(counts, lint_ok=args.lint == "ok", seconds=args.seconds) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
