"""`laptime parse` end to end against a plain lxml iterparse script printing the same lines.

Run: `.venv/bin/python -m bench.bench_parse_cli [--testcases 170000] [--repeat 3]`.
Both sides are real subprocesses (interpreter start, imports, parse, JSON Lines to a pipe
drained to /dev/null) over the same generated pytest report file. The baseline is the script
a user would write: lxml iterparse over <testcase>, the same keys, one json.dumps per row.
The ratio is baseline time / CLI time (>= 1.0 = the CLI prints at least as fast), best of
alternated runs (the machine is shared: the minimum is the least noisy estimate).

Before (the figures README.md quotes; tests/test_before_figures.py checks them):
- `0.94x`: 2.41 s vs 2.27 s, the code at commit 2ea2883cd539 (the parent of c9b8d84, JSON Lines
  column by column), `python -m bench.bench_parse_cli`.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.bench_parse_junit import generate_pytest_report

TARGET_RATIO = 1.0
_OUTCOME_TAGS = {"failure": "failed", "error": "error", "skipped": "skipped"}
CLI = [sys.executable, "-c", "from app.cli.main import main; main()", "parse"]
BASELINE = [sys.executable, "-m", "bench.bench_parse_cli", "--baseline"]


def baseline_print(path: str) -> None:
    """The plain script: lxml iterparse, the parse command's keys, json.dumps per row."""
    from lxml import etree  # type: ignore[import-untyped]

    lines = []
    for _event, elem in etree.iterparse(path, events=("end",), tag="testcase"):
        name = elem.get("name") or ""
        classname = elem.get("classname") or ""
        file = elem.get("file")
        module = file[:-3].replace("/", ".") if file else ""
        classes = classname[len(module) + 1 :].replace(".", "::") if module else classname
        bracket = name.find("[")
        split = bracket > 0 and name.endswith("]")
        outcome, message = "passed", None
        for child in elem:
            found = _OUTCOME_TAGS.get(child.tag)
            if found is not None:
                outcome, message = found, child.get("message")
        time_s = elem.get("time")
        lines.append(
            json.dumps(
                {
                    "nodeid": "::".join(p for p in (file, classes, name) if p),
                    "file": file,
                    "classname": classes or None,
                    "function": name[:bracket] if split else name,
                    "params": name[bracket + 1 : -1] if split else None,
                    "outcome": outcome,
                    "duration_s": float(time_s) if time_s else None,
                    "setup_s": None,
                    "call_s": None,
                    "teardown_s": None,
                    "attempts": 1,
                    "last_attempt_s": None,
                    "flaky": False,
                    "suite": "pytest",
                    "message": message,
                }
            )
        )
        elem.clear(keep_tail=True)
    sys.stdout.write("\n".join(lines) + "\n")


def run(command: list[str]) -> tuple[float, int]:
    """Seconds of one subprocess and how many lines it printed."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, check=True)
    return time.perf_counter() - start, done.stdout.count(b"\n")


def main() -> None:
    """Generate the report, time both sides alternately, print the ratio."""
    cli = argparse.ArgumentParser(description=__doc__)
    cli.add_argument("--testcases", type=int, default=170_000)
    cli.add_argument("--repeat", type=int, default=3)
    cli.add_argument("--baseline", metavar="FILE", help=argparse.SUPPRESS)
    args = cli.parse_args()
    if args.baseline:
        baseline_print(args.baseline)
        return
    with tempfile.TemporaryDirectory(prefix="laptime-bench-") as tmp:
        path = Path(tmp) / "report.xml"
        path.write_bytes(generate_pytest_report(args.testcases))
        best = {"baseline": float("inf"), "laptime parse": float("inf")}
        lines = {}
        for _ in range(args.repeat):
            for side, command in (("baseline", BASELINE), ("laptime parse", CLI)):
                seconds, lines[side] = run([*command, str(path)])
                best[side] = min(best[side], seconds)
        size_mb = path.stat().st_size / 1e6
    print(f"report: {args.testcases} testcases, {size_mb:.1f} MB, best of {args.repeat}")
    for side, seconds in best.items():
        print(f"{side:<14}: {seconds:.3f} s  {lines[side]:,} lines")
    ratio = best["baseline"] / best["laptime parse"]
    verdict = "ok" if ratio >= TARGET_RATIO else "BELOW TARGET"
    print(f"ratio (baseline / laptime parse): {ratio:.2f}x  (target >= {TARGET_RATIO}x: {verdict})")


if __name__ == "__main__":
    main()
