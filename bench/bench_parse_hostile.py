"""Parse cost on hostile XML is linear: refusal time flat in the payload, accepted time 2x/2x.

Run: `.venv/bin/python -m bench.bench_parse_hostile [--repeat 3]`.
- refused: a small gzip holding one huge comment (the issue's 450 MB comment, at 50, 100 and
  200 MB). The node guard refuses it one cap into the inflation, so the time must not grow
  with the payload (before: quadratic in expat, see below);
- accepted: documents of many comments just under the node cap (the worst case the cap
  allows: expat re-reads each unfinished one every 1 MiB) at N and 2N MiB; linear cost
  means the time ratio is about 2 (quadratic would be 4).
Times are best of `repeat`; ratios come from the same run.

Before (the figures README.md quotes; tests/test_before_figures.py checks them):
- `1.31 / 5.23 / 20.56 s`: 50 / 100 / 200 MB refused or parsed by the code at commit
  fa16678e44bc (the parent of d4acbab, the node guard), `python -m bench.bench_parse_hostile`
  (docs/benchmarks.md's "main" column; this docstring said 1.7 / 5.4 / 21.2 s, from a run
  whose commit was not recorded).
"""

from __future__ import annotations

import argparse
import time
import zlib
from collections.abc import Callable

from ingest.model import ReportParseError
from ingest.parsers import DEFAULT_LIMITS, parse_report

MIB = 1 << 20
HEAD = b'<testsuite name="s"><testcase classname="c" name="t" time="1.5"/>'
TAIL = b"</testsuite>"


def gzip_comment(megabytes: int) -> bytes:
    """A gzip of one `megabytes` MiB comment inside a valid report, built in 1 MiB steps."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b"a" * MIB
    out = [compressor.compress(HEAD + b"<!--")]
    out += [compressor.compress(block) for _ in range(megabytes)]
    out += [compressor.compress(b"-->" + TAIL), compressor.flush()]
    return b"".join(out)


def near_cap_comments(megabytes: int) -> bytes:
    """`megabytes` MiB of comments each 1 MiB under the node cap, in a valid report."""
    size = DEFAULT_LIMITS.max_node_bytes - MIB
    count = max(1, megabytes * MIB // size)
    comment = b"<!--" + b"c" * (size - 7) + b"-->"
    return HEAD + comment * count + TAIL


def best(repeat: int, fn: Callable[[], object]) -> float:
    """Best-of-`repeat` seconds of fn()."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def refuse(data: bytes) -> None:
    """Parse and insist on the node-too-large refusal."""
    try:
        parse_report(data)
    except ReportParseError as error:
        if error.code != "node-too-large":
            raise AssertionError(f"refused with {error.code}, not node-too-large") from error
        return
    raise AssertionError("hostile comment was accepted")


def main() -> None:
    """Time both families and print the ratios."""
    cli = argparse.ArgumentParser(description=__doc__)
    cli.add_argument("--repeat", type=int, default=3)
    args = cli.parse_args()
    refused = {}
    for megabytes in (50, 100, 200):
        data = gzip_comment(megabytes)
        refused[megabytes] = best(args.repeat, lambda data=data: refuse(data))  # type: ignore[misc]
        print(
            f"refused: {megabytes:>3} MB comment ({len(data) / 1e3:,.0f} KB gzip): "
            f"{refused[megabytes]:.3f} s"
        )
    print(f"refusal time ratio 200 MB / 50 MB: {refused[200] / refused[50]:.2f}x (flat ~1x)")
    accepted = {}
    for megabytes in (120, 240):
        data = near_cap_comments(megabytes)
        accepted[megabytes] = best(args.repeat, lambda data=data: parse_report(data))  # type: ignore[misc]
        print(
            f"accepted: {len(data) / MIB:,.0f} MiB of near-cap comments: "
            f"{accepted[megabytes]:.3f} s"
        )
    ratio = accepted[240] / accepted[120]
    verdict = "linear" if ratio < 2.6 else "SUPERLINEAR"
    print(f"accepted time ratio 2N / N: {ratio:.2f}x (linear ~2x, quadratic ~4x): {verdict}")


if __name__ == "__main__":
    main()
