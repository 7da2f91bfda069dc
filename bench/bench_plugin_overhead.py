"""Overhead of the laptime pytest plugin, and the error of its peak-RSS measurement.

    .venv/bin/python -m bench.bench_plugin_overhead            # 2,000 tests, 7 rounds
    .venv/bin/python -m bench.bench_plugin_overhead --quick    # 1,000 tests, 3 rounds
    .venv/bin/python -m bench.bench_plugin_overhead --fallback # also time the sampling fallback

Runs the same suite of trivial tests with and without `--laptime-report` in alternating
rounds (subprocesses, same machine, same invocation) and reports the median ratio of the
session time pytest prints ("in 1.23s") and of the whole process wall time. Then runs a
suite that allocates known amounts, once per peak-RSS method (the kernel's high-water mark
where available, and the forced sampling fallback), and prints the measured peak against the
truth. Everything is written under a temporary directory, never into the repo.
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


def test_3_150_below_high_water(request):
    # Below test 1's high-water mark: the reset kernel mark sees it even freed at once; the
    # sampling fallback only while it is held, so it is held for two samples there.
    monitor = request.config.pluginmanager.get_plugin("laptime-writer").monitor
    block = touched(150)
    if monitor.method == "sampling":
        start = monitor.samples_taken
        deadline = time.monotonic() + 20
        while monitor.samples_taken < start + 2 and time.monotonic() < deadline:
            time.sleep(0.001)
    del block


def test_4_after():
    pass
"""


# Loaded before the plugin registers its hook objects: wraps their per-test hooks (and the
# session-end writer) with timers, and leaves the totals in hooks.json.
HOOK_TIMER_CONFTEST = """
import functools
import json
import time

import laptime_ci.plugin as plugin

TOTALS = {}


def timed(cls, name, key):
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            TOTALS[key] = TOTALS.get(key, 0.0) + time.perf_counter() - started

    setattr(cls, name, wrapper)


timed(plugin.ItemRecorder, "pytest_runtest_setup", "setup")
timed(plugin.ReportWriter, "pytest_runtest_logreport", "reports")
timed(plugin.ReportWriter, "pytest_sessionfinish", "session_end")


def pytest_unconfigure(config):
    with open("hooks.json", "w") as out:
        json.dump(TOTALS, out)
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


def measure_overhead(tests: int, rounds: int, *, fallback: bool = False) -> None:
    """Alternate baseline and plugin runs; print medians and ratios."""
    with tempfile.TemporaryDirectory(prefix="laptime-bench-") as tmp:
        root = Path(tmp)
        write_trivial_suite(root, tests)
        arms = {
            "baseline": [],
            "plugin": [f"--laptime-report={root / 'report.json'}"],
        }
        if fallback:
            arms["sampling"] = [
                f"--laptime-report={root / 'sampling.json'}",
                "--laptime-rss-method=sampling",
            ]
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
        document = json.loads((root / "report.json").read_text())
    records = len(document["tests"])
    method = document["session"].get("test_peak_rss_method")
    print(
        f"suite: {tests} trivial tests, {rounds} alternating rounds, {records} records written "
        f"(plugin arm's peak-RSS method: {method})"
    )
    for name in arms:
        print(
            f"  {name:9s} session median {statistics.median(session[name]):6.3f} s"
            f"   process wall median {statistics.median(wall[name]):6.3f} s"
            f"   process CPU median {statistics.median(cpu[name]):6.3f} s"
        )
    for name in arms:
        if name != "baseline":
            _print_ratios(name, session, wall, cpu)


def _print_ratios(
    name: str,
    session: dict[str, list[float]],
    wall: dict[str, list[float]],
    cpu: dict[str, list[float]],
) -> None:
    ratios = [p / b for p, b in zip(session[name], session["baseline"], strict=True)]
    wall_ratios = [p / b for p, b in zip(wall[name], wall["baseline"], strict=True)]
    ratio = statistics.median(ratios)
    print(
        f"  {name}: session-time ratio {name}/baseline: median {ratio:.3f} "
        f"(rounds: {', '.join(f'{r:.3f}' for r in ratios)})"
    )
    print(f"  {name}: process-wall ratio: median {statistics.median(wall_ratios):.3f}")
    # On a shared machine the fastest run of each arm is the least disturbed one.
    best = min(session[name]) / min(session["baseline"])
    cpu_ratio = statistics.median(cpu[name]) / statistics.median(cpu["baseline"])
    print(f"  {name}: session-time ratio of the fastest runs: {best:.3f}")
    print(f"  {name}: process CPU-time ratio (medians): {cpu_ratio:.3f}")
    print(
        f"  {name}: overhead {100 * (ratio - 1):+.1f}% of session time "
        f"({'within' if ratio < 1.05 else 'OVER'} the 5% budget)"
    )


def measure_hook_time(tests: int, runs: int = 3) -> None:
    """Time spent inside the plugin's own hooks per test: steadier than the ratios above."""
    with tempfile.TemporaryDirectory(prefix="laptime-bench-hooks-") as tmp:
        root = Path(tmp)
        write_trivial_suite(root, tests)
        (root / "conftest.py").write_text(HOOK_TIMER_CONFTEST)
        totals: dict[str, list[float]] = {}
        for _ in range(runs):
            session_s, _wall, _cpu = run_pytest(root, ["--laptime-report=report.json"])
            hooks = json.loads((root / "hooks.json").read_text())
            for key, seconds in [*hooks.items(), ("session", session_s)]:
                totals.setdefault(key, []).append(seconds * 1e6 / tests)
    best = {key: min(values) for key, values in totals.items()}
    own = best["setup"] + best["reports"] + best["session_end"]
    print(
        f"plugin's own time per test (fastest of {runs} runs, {tests} tests): "
        f"setup {best['setup']:.1f} us, 3 reports {best['reports']:.1f} us, "
        f"session end {best['session_end']:.1f} us; total {own:.1f} us = "
        f"{100 * own / best['session']:.1f}% of the {best['session']:.0f} us per test "
        "of that session"
    )


def measure_memory_error(option: str) -> None:
    """Peak RSS of tests allocating known amounts, minus the baseline test's peak."""
    with tempfile.TemporaryDirectory(prefix="laptime-bench-mem-") as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text(INI)
        (root / "test_memory.py").write_text(MEMORY_SUITE)
        run_pytest(root, ["--laptime-report=m.json", f"--laptime-rss-method={option}"])
        document = json.loads((root / "m.json").read_text())
    peak = {t["function"]: t["peak_rss_mib"] for t in document["tests"]}
    base = peak["test_0_baseline"]
    method = document["session"].get("test_peak_rss_method")
    print(f"peak RSS, --laptime-rss-method={option} -> {method} (baseline test {base:.1f} MiB):")
    held = "freed at once" if method == "hwm-reset" else "held for 2 samples"
    for name, truth in (
        ("test_1_spike_200_freed_at_once", 200.0),
        ("test_2_after", 0.0),
        ("test_3_150_below_high_water", 150.0),
        ("test_4_after", 0.0),
    ):
        delta = peak[name] - base
        note = f" ({held})" if name.startswith("test_3") else ""
        print(
            f"  {name:34s} expected +{truth:5.1f} MiB, measured {delta:+7.2f} MiB "
            f"(error {delta - truth:+.2f} MiB){note}"
        )


def main() -> None:
    """Parse flags and run both measurements."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="1,000 tests, 3 rounds")
    parser.add_argument(
        "--fallback", action="store_true", help="add an arm with the sampling fallback forced"
    )
    args = parser.parse_args()
    tests, rounds = (1000, 3) if args.quick else (args.tests, args.rounds)
    measure_overhead(tests, rounds, fallback=args.fallback)
    measure_hook_time(tests)
    for option in ("auto", "sampling"):
        measure_memory_error(option)


if __name__ == "__main__":
    main()
