"""End-to-end throughput of the JUnit parser against a plain lxml iterparse extraction.

Run: `.venv/bin/python -m bench.bench_parse_junit [--testcases 200000] [--repeat 5] [--quick]`.
Both sides start from the same bytes of a generated pytest report. The parser side goes all
the way to a ParsedReport with its results DataFrame; the baseline is an `lxml.etree.iterparse`
loop that only collects the same fields (name, classname, file, time, outcome, message) into
Python lists, building no frame. The ratio is baseline time / parser time (> 1 = faster),
best of alternated runs (the machine is shared: the minimum is the least noisy estimate).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from io import BytesIO

from lxml import etree  # type: ignore[import-untyped]

from ingest.parsers import parse_report

TARGET_RATIO = 1.5
_OUTCOME_TAGS = {"failure": "failed", "error": "error", "skipped": "skipped"}


def generate_pytest_report(testcases: int) -> bytes:
    """A pytest xunit1-style report: modules, classes, parametrized tests, some failures."""
    parts = [
        '<?xml version="1.0" encoding="utf-8"?><testsuites>'
        f'<testsuite name="pytest" errors="0" failures="0" skipped="0" tests="{testcases}" '
        'time="812.5" timestamp="2026-01-01T00:00:00" hostname="ci">'
    ]
    for i in range(testcases):
        module = f"tests/pkg{i % 7}/test_mod{i // 500}"
        cls = f".TestC{i % 3}" if i % 4 else ""
        name = f"test_case_{i // 10}[p{i % 10}-x]" if i % 2 else f"test_plain_{i}"
        head = (
            f'<testcase classname="{module.replace("/", ".")}{cls}" name="{name}" '
            f'file="{module}.py" line="{i % 300}" time="{(i % 997) / 1000:.3f}"'
        )
        if i % 50 == 0:
            parts.append(
                f'{head}><failure message="assert {i} == 0">trace {i}</failure></testcase>'
            )
        elif i % 33 == 0:
            parts.append(
                f'{head}><skipped type="pytest.skip" message="no gpu">skip</skipped></testcase>'
            )
        else:
            parts.append(f"{head} />")
    parts.append("</testsuite></testsuites>")
    return "\n".join(parts).encode()


def baseline_iterparse(data: bytes) -> int:
    """Collect the fields the parser reads into lists with lxml iterparse, no DataFrame."""
    names: list[str | None] = []
    classnames: list[str | None] = []
    files: list[str | None] = []
    times: list[str | None] = []
    outcomes: list[str] = []
    messages: list[str | None] = []
    for _event, elem in etree.iterparse(BytesIO(data), events=("end",), tag="testcase"):
        names.append(elem.get("name"))
        classnames.append(elem.get("classname"))
        files.append(elem.get("file"))
        times.append(elem.get("time"))
        outcome, message = "passed", None
        for child in elem:
            found = _OUTCOME_TAGS.get(child.tag)
            if found is not None:
                outcome, message = found, child.get("message")
        outcomes.append(outcome)
        messages.append(message)
        elem.clear(keep_tail=True)
    return len(names)


def parse_end_to_end(data: bytes) -> int:
    """Bytes -> ParsedReport with its results frame."""
    return len(parse_report(data, filename="bench.xml").results)


def timed_pair(
    repeat: int, first: Callable[[bytes], int], second: Callable[[bytes], int], data: bytes
) -> tuple[float, float, int, int]:
    """Best-of-`repeat` seconds of two calls, alternated so both see the same machine load."""
    best = [float("inf"), float("inf")]
    rows = [0, 0]
    for _ in range(repeat):
        for side, fn in enumerate((first, second)):
            start = time.perf_counter()
            rows[side] = fn(data)
            best[side] = min(best[side], time.perf_counter() - start)
    return best[0], best[1], rows[0], rows[1]


def main() -> None:
    """Generate a report, time both sides alternately, print throughputs and the ratio."""
    cli = argparse.ArgumentParser(description=__doc__)
    cli.add_argument("--testcases", type=int, default=200_000)
    cli.add_argument("--repeat", type=int, default=5)
    cli.add_argument("--quick", action="store_true", help="20,000 testcases")
    args = cli.parse_args()
    n = 20_000 if args.quick else args.testcases
    data = generate_pytest_report(n)
    print(f"report: {n} testcases, {len(data) / 1e6:.1f} MB")
    # Warm both code paths (imports, caches) before timing.
    baseline_iterparse(data[: data.index(b"\n", 10_000)] + b"</testsuite></testsuites>")
    parse_end_to_end(data[: data.index(b"\n", 10_000)] + b"</testsuite></testsuites>")
    base_s, ours_s, base_rows, our_rows = timed_pair(
        args.repeat, baseline_iterparse, parse_end_to_end, data
    )
    assert base_rows == our_rows == n, (base_rows, our_rows, n)
    ratio = base_s / ours_s
    print(f"lxml iterparse into lists (baseline): {base_s:.3f} s  {n / base_s:,.0f} testcases/s")
    print(f"parse_report -> ParsedReport + frame: {ours_s:.3f} s  {n / ours_s:,.0f} testcases/s")
    verdict = "ok" if ratio >= TARGET_RATIO else "BELOW TARGET"
    print(f"ratio (baseline / ours): {ratio:.2f}x  (target >= {TARGET_RATIO}x: {verdict})")


if __name__ == "__main__":
    main()
