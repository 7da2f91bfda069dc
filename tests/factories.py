"""Plain typed factories for report files used across tests."""

from __future__ import annotations

import random
from xml.sax.saxutils import quoteattr


def junit_xml(
    tests: int,
    *,
    files: int = 3,
    seed: int = 0,
    failures: int = 0,
    prefix: str = "tests/test_mod",
) -> bytes:
    """A pytest-style (xunit2) JUnit report with `tests` testcases spread over `files` files."""
    rng = random.Random(seed)
    cases = []
    for i in range(tests):
        module = f"{prefix}{i % files}".replace("/", ".")
        time_s = round(rng.uniform(0.001, 2.0), 6)
        body = '<failure message="boom">assert 0</failure>' if i < failures else ""
        cases.append(
            f'<testcase classname={quoteattr(module)} name="test_case_{i}" time="{time_s}">'
            f"{body}</testcase>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" '
        f'errors="0" failures="{failures}" skipped="0" tests="{tests}">'
        + "".join(cases)
        + "</testsuite></testsuites>"
    ).encode()


def junit_total_seconds(xml: bytes) -> float:
    """Sum of the time attributes of a report made by junit_xml."""
    import re

    return sum(float(t) for t in re.findall(rb'time="([0-9.]+)"', xml))
