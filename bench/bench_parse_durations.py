"""Throughput of parse_durations on a generated CI log with GitHub Actions timestamp prefixes.

Run: `.venv/bin/python -m bench.bench_parse_durations [--rows 300000] [--repeat 3] [--quick]`.
Prints rows/s for the parser and for a baseline measured in the same run: a plain loop that
only splits each line into fields (`str.split`), doing none of the parser's work.
"""

from __future__ import annotations

import argparse
import time

from ingest.parsers.durations import parse_durations

TARGET_ROWS_PER_S = 400_000


def generate_log(rows: int) -> bytes:
    """A CI log: noise, a durations section of `rows` phase rows, a footer; every line stamped."""
    stamp = "2026-09-11T15:05:09.3104947Z "
    lines = [f"{stamp}tests/test_mod{i}.py .....  [ {i % 100:3d}%]" for i in range(200)]
    lines.append(f"{stamp}{'=' * 30} slowest durations {'=' * 30}")
    phases = ("call", "setup", "teardown")
    for i in range(rows):
        when = phases[i % 3]
        test = i // 3
        nodeid = (
            f"tests/test_mod{test // 1000}.py::TestC{test % 7}::test_case_{test}[p{test % 5}-x]"
        )
        lines.append(f"{stamp}{(rows - i) / 1000:.2f}s {when:<8} {nodeid}")
    lines.append(stamp)
    lines.append(f"{stamp}(1234 durations < 0.005s hidden.  Use -vv to show these durations.)")
    lines.append(f"{stamp}{'=' * 30} {rows // 3} passed in 812.00s (0:13:32) {'=' * 30}")
    return ("\n".join(lines) + "\n").encode()


def baseline_split(data: bytes) -> int:
    """Decode and split every line into whitespace fields: the cheapest possible pass."""
    count = 0
    for line in data.decode().split("\n"):
        fields = line.split()
        if len(fields) == 4 and fields[1].endswith("s"):
            count += 1
    return count


def best_of(repeat: int, fn: object, data: bytes) -> float:
    """Best wall time of `repeat` calls of fn(data), in seconds."""
    assert callable(fn)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(data)
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    """Generate the log, time parser and baseline, print rows/s and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="30,000 rows, 2 repeats")
    args = parser.parse_args()
    rows, repeat = (30_000, 2) if args.quick else (args.rows, args.repeat)
    data = generate_log(rows)
    report = parse_durations(data)
    assert len(report.results) == rows // 3 + (1 if rows % 3 else 0), len(report.results)
    assert report.hidden_rows == 1234
    parse_s = best_of(repeat, parse_durations, data)
    base_s = best_of(repeat, baseline_split, data)
    print(f"log: {rows:,} rows, {len(data) / 1e6:.1f} MB, best of {repeat}")
    print(f"parse_durations : {parse_s:7.3f} s  {rows / parse_s:12,.0f} rows/s")
    print(f"str.split loop  : {base_s:7.3f} s  {rows / base_s:12,.0f} rows/s")
    print(f"ratio parser/baseline time: {parse_s / base_s:.2f}x")
    if rows >= 300_000:
        verdict = "OK" if rows / parse_s >= TARGET_ROWS_PER_S else "BELOW TARGET"
        print(f"target {TARGET_ROWS_PER_S:,} rows/s: {verdict}")
    else:
        print(f"(the {TARGET_ROWS_PER_S:,} rows/s target is for a 300,000-row log)")


if __name__ == "__main__":
    main()
