"""Why a planned job can run slower than its history: the allocator's state.

    .venv/bin/python -m bench.bench_allocator_state                      # after bench_plan_accuracy
    .venv/bin/python -m bench.bench_allocator_state /tmp/laptime-accuracy --jobs 4 --rounds 3
    .venv/bin/python -m bench.bench_allocator_state --alone      # the file's tests by themselves

glibc raises its mmap threshold after a process frees large blocks, so a long-running process
serves later large allocations from its heap while a fresh process maps (and page-faults) them
in each time. This runs one planned job of `bench_plan_accuracy` (the one holding `--file`,
default networkx's spring-layout tests) in alternating rounds with glibc's dynamic thresholds
(`--laptime-malloc=dynamic`) and with the plugin's fixed ones (its default, see
laptime_ci.plugin_malloc), each a fresh `python -m pytest` process, and
prints per arm the median wall, user and system CPU, minor page faults (`wait4`) and the
seconds the file's tests took (the plugin's report), beside what the history runs gave them.
Whether a job suffers depends on what its earlier tests allocated and freed: `--alone` runs
the file by itself, the coldest allocator it can meet. It reuses bench_plan_accuracy's venv
and plan files (run that first); nothing is written into the repo.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

from bench.bench_plan_accuracy import FULL_TARGET
from laptime_ci.plugin_malloc import ALLOCATOR_ENV


def _tests_s(report: Path, file: str) -> float:
    return _by_file(report).get(file, 0.0)


def _by_file(report: Path) -> dict[str, float]:
    """Seconds per test file in a plugin report."""
    seconds: dict[str, float] = {}
    for test in json.loads(report.read_text())["tests"]:
        file = test["nodeid"].split("::", 1)[0]
        seconds[file] = seconds.get(file, 0.0) + (test["duration_s"] or 0.0)
    return seconds


def run_once(
    python: Path, work: Path, args: list[str], env: dict[str, str], file: str
) -> tuple[dict[str, float], dict[str, float]]:
    """One fresh pytest process of the job: wall, CPU, page faults and the file's seconds;
    and the seconds of every file it ran."""
    report = work / "allocator_state.json"
    report.unlink(missing_ok=True)
    command = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    command.append(f"--laptime-report={report}")
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=work, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"the job did not run: {' '.join(command)}")
    by_file = _by_file(report)
    measures = {
        "wall_s": wall,
        "user_s": usage.ru_utime,
        "system_s": usage.ru_stime,
        "minor_faults": float(usage.ru_minflt),
        "file_tests_s": by_file.get(file, 0.0),
    }
    return measures, by_file


def main(argv: list[str] | None = None) -> int:
    """Alternate the two arms over the job holding `--file`; print the medians."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv", nargs="?", default="/tmp/laptime-accuracy", type=Path)
    parser.add_argument("--jobs", type=int, default=4, help="which plan (N jobs) to take")
    parser.add_argument("--file", default="drawing/tests/test_layout.py")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--alone", action="store_true", help="only the file's own tests")
    parser.add_argument(
        "--whole", action="store_true", help="the whole suite, as the history runs it"
    )
    args = parser.parse_args(argv)
    work = args.venv / "work"
    plan = json.loads((work / f"plan{args.jobs}.json").read_text())
    holding = [
        (i, job)
        for i, job in enumerate(plan["jobs"], start=1)
        if any(str(m).startswith(args.file) for m in job["members"])
    ]
    if not holding:
        raise SystemExit(f"no job of plan{args.jobs}.json holds {args.file}")
    index, job = holding[0]
    if args.whole:
        index, job = 0, {"pytest_args": ["--pyargs", FULL_TARGET], "n_tests": "all"}
    history = [
        _tests_s(work / f"history{i}.json", args.file)
        for i in (1, 2)
        if (work / f"history{i}.json").exists()
    ]
    python = args.venv / "bin" / "python"
    job_args = list(job["pytest_args"])
    if args.alone:
        # The job's options, and of its selections only the one naming the file.
        module = args.file.removesuffix(".py").replace("/", ".")
        job_args = [a for a in job_args if a.startswith("-") or a.endswith((args.file, module))]
    # The plugin's mode decides, not thresholds this shell may carry.
    env = {k: v for k, v in os.environ.items() if k not in ALLOCATOR_ENV}
    arms: dict[str, tuple[str, list[dict[str, float]]]] = {
        "glibc's dynamic thresholds": ("dynamic", []),
        "the plugin's fixed thresholds": ("pinned", []),
    }
    files: dict[str, list[dict[str, float]]] = {name: [] for name in arms}
    for round_ in range(1, args.rounds + 1):
        for name, (mode, runs) in arms.items():
            measures, by_file = run_once(
                python, work, [*job_args, f"--laptime-malloc={mode}"], env, args.file
            )
            runs.append(measures)
            files[name].append(by_file)
            print(f"  round {round_} {name}: {runs[-1]['wall_s']:.1f}s wall", flush=True)
    what = (
        "alone"
        if args.alone
        else "the whole suite"
        if args.whole
        else f"N={args.jobs} job {index} ({job['n_tests']} tests)"
    )
    print(f"{what}, {args.file}: {' / '.join(f'{s:.2f}' for s in history)} s in the history runs")
    print("| arm | wall s | user s | system s | minor faults | the file's tests s |")
    print("|---|---|---|---|---|---|")
    for name, (_mode, runs) in arms.items():
        med: dict[str, Any] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        print(
            f"| {name} | {med['wall_s']:.1f} | {med['user_s']:.1f} | {med['system_s']:.2f} | "
            f"{med['minor_faults']:,.0f} | {med['file_tests_s']:.2f} |"
        )
    print(differing_files(files))
    return 0


def differing_files(files: dict[str, list[dict[str, float]]], top: int = 8) -> str:
    """The files whose median seconds differ most between the arms (first arm minus second)."""
    (first, first_runs), (second, second_runs) = files.items()
    names = set().union(*first_runs, *second_runs)

    def median(runs: list[dict[str, float]], name: str) -> float:
        return statistics.median(run.get(name, 0.0) for run in runs)

    deltas = sorted(
        ((median(first_runs, n), median(second_runs, n), n) for n in names),
        key=lambda row: -abs(row[0] - row[1]),
    )
    lines = [f"| file | {first} s | {second} s | difference s |", "|---|---|---|---|"]
    lines += [f"| {n} | {a:.2f} | {b:.2f} | {a - b:+.2f} |" for a, b, n in deltas[:top]]
    total_a = sum(a for a, _, _ in deltas)
    total_b = sum(b for _, b, _ in deltas)
    lines.append(f"| all files | {total_a:.1f} | {total_b:.1f} | {total_a - total_b:+.1f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
