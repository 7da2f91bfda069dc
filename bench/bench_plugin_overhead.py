"""Overhead of the laptime pytest plugin, and the error of its peak-RSS measurement.

    .venv/bin/python -m bench.bench_plugin_overhead            # 2,000 tests, 7 rounds
    .venv/bin/python -m bench.bench_plugin_overhead --quick    # 1,000 tests, 3 rounds

Runs the same suite of trivial tests with and without `--laptime-report` in alternating
rounds (subprocesses, same machine, same invocation) and reports the median ratio of the
session time pytest prints ("in 1.23s") and of the whole process wall time. Then runs a
suite that allocates known amounts and prints the measured peak against the truth.
Everything is written under a temporary directory, never into the repo.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TESTS_PER_FILE = 100
SESSION_TIME = re.compile(r" in ([0-9.]+)s")
INI = "[pytest]\naddopts = -p no:cacheprovider -p no:xdist -p no:randomly\n"

MEMORY_SUITE = """
import time

MIB = 1024 * 1024


def touched(mib):
    block = bytearray(mib * MIB)
    block[::4096] = b"\\x01" * len(range(0, len(block), 4096))
    return block


def test_0_baseline():
    pass


def test_1_spike_200_freed_at_once():
    block = touched(200)
    del block


def test_2_after():
    pass


def test_3_held_150_below_high_water(request):
    monitor = request.config.pluginmanager.get_plugin("laptime-writer").monitor
    block = touched(150)
    start = monitor.samples_taken
    deadline = time.monotonic() + 20
    while monitor.samples_taken < start + 2 and time.monotonic() < deadline:
        time.sleep(0.001)
    del block


def test_4_after():
    pass
"""


def write_trivial_suite(root: Path, tests: int) -> None:
    """`tests` trivial test functions spread over files of TESTS_PER_FILE."""
    (root / "pytest.ini").write_text(INI)
    files = max(1, tests // TESTS_PER_FILE)
    for index in range(files):
        count = TESTS_PER_FILE if index < files - 1 else tests - TESTS_PER_FILE * (files - 1)
        body = "".join(f"def test_{j}():\n    assert True\n\n" for j in range(count))
        (root / f"test_trivial_{index}.py").write_text(body)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_pytest(root: Path, extra: list[str]) -> tuple[float, float, float]:
    """(session seconds as pytest prints them, process wall seconds, process CPU seconds)."""
    cpu_before = _children_cpu_s()
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *extra],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    cpu = _children_cpu_s() - cpu_before
    if proc.returncode != 0:
        raise SystemExit(f"pytest failed ({proc.returncode}):\n{proc.stdout[-2000:]}")
    match = SESSION_TIME.findall(proc.stdout.strip().splitlines()[-1])
    if not match:
        raise SystemExit(f"no session time in: {proc.stdout[-300:]}")
    return float(match[-1]), wall, cpu


def measure_overhead(tests: int, rounds: int) -> None:
    """Alternate baseline and plugin runs; print medians and ratios."""
    with tempfile.TemporaryDirectory(prefix="laptime-bench-") as tmp:
        root = Path(tmp)
        write_trivial_suite(root, tests)
        arms = {
            "baseline": [],
            "plugin": [f"--laptime-report={root / 'report.json'}"],
        }
        run_pytest(root, [])  # warm the file cache and bytecode
        session: dict[str, list[float]] = {name: [] for name in arms}
        wall: dict[str, list[float]] = {name: [] for name in arms}
        cpu: dict[str, list[float]] = {name: [] for name in arms}
        for round_index in range(rounds):
            order = list(arms) if round_index % 2 == 0 else list(reversed(arms))
            for name in order:
                seconds, process_s, cpu_s = run_pytest(root, arms[name])
                session[name].append(seconds)
                wall[name].append(process_s)
                cpu[name].append(cpu_s)
        records = len(json.loads((root / "report.json").read_text())["tests"])
    ratios = [p / b for p, b in zip(session["plugin"], session["baseline"], strict=True)]
    wall_ratios = [p / b for p, b in zip(wall["plugin"], wall["baseline"], strict=True)]
    print(f"suite: {tests} trivial tests, {rounds} alternating rounds, {records} records written")
    for name in arms:
        print(
            f"  {name:9s} session median {statistics.median(session[name]):6.3f} s"
            f"   process wall median {statistics.median(wall[name]):6.3f} s"
            f"   process CPU median {statistics.median(cpu[name]):6.3f} s"
        )
    ratio = statistics.median(ratios)
    print(
        f"  session-time ratio plugin/baseline: median {ratio:.3f} "
        f"(rounds: {', '.join(f'{r:.3f}' for r in ratios)})"
    )
    print(f"  process-wall ratio plugin/baseline: median {statistics.median(wall_ratios):.3f}")
    # On a shared machine the fastest run of each arm is the least disturbed one.
    best = min(session["plugin"]) / min(session["baseline"])
    cpu_ratio = statistics.median(cpu["plugin"]) / statistics.median(cpu["baseline"])
    print(f"  session-time ratio of the fastest runs: {best:.3f}")
    print(f"  process CPU-time ratio (medians): {cpu_ratio:.3f}")
    print(
        f"  overhead {100 * (ratio - 1):+.1f}% of session time "
        f"({'within' if ratio < 1.05 else 'OVER'} the 5% budget)"
    )


def measure_memory_error() -> None:
    """Peak RSS of tests allocating known amounts, minus the baseline test's peak."""
    with tempfile.TemporaryDirectory(prefix="laptime-bench-mem-") as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text(INI)
        (root / "test_memory.py").write_text(MEMORY_SUITE)
        run_pytest(root, ["--laptime-report=m.json"])
        tests = json.loads((root / "m.json").read_text())["tests"]
    peak = {t["function"]: t["peak_rss_mib"] for t in tests}
    base = peak["test_0_baseline"]
    print(f"peak RSS (baseline test {base:.1f} MiB):")
    for name, truth in (
        ("test_1_spike_200_freed_at_once", 200.0),
        ("test_2_after", 0.0),
        ("test_3_held_150_below_high_water", 150.0),
        ("test_4_after", 0.0),
    ):
        delta = peak[name] - base
        print(
            f"  {name:34s} expected +{truth:5.1f} MiB, measured {delta:+7.2f} MiB "
            f"(error {delta - truth:+.2f} MiB)"
        )


def main() -> None:
    """Parse flags and run both measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="1,000 tests, 3 rounds")
    args = parser.parse_args()
    tests, rounds = (1000, 3) if args.quick else (args.tests, args.rounds)
    measure_overhead(tests, rounds)
    measure_memory_error()


if __name__ == "__main__":
    main()
