"""Do laptime's split plans come true on a real open-source suite? (The job model's acceptance,
docs/planner.md#the-model.)

    .venv/bin/python -m bench.bench_plan_accuracy                 # networkx, N = 2, 3, 4
    .venv/bin/python -m bench.bench_plan_accuracy --quick         # a subset, N = 2: smoke test
    .venv/bin/python -m bench.bench_plan_accuracy /tmp/acc --jobs 2,3,4 --repeats 2

The suite is networkx's own (`pytest --pyargs networkx`, shipped inside the wheel), with
numpy and scipy installed: ~6,800 tests, ~1.5-3 min on one core, very uneven files (a few
algorithm modules hold most of the time) and heavy first-use costs (the first test touching
numpy, scipy.sparse or scipy.linalg pays their import, module fixtures build large graphs).
It is installed into its own venv (the path argument, default /tmp/laptime-accuracy, outside
the repo) with this checkout's laptime_ci plugin and pytest-split; nothing is written into
the repo unless `--out` says so.

Steps, one at a time on this machine (no parallel runs, so jobs do not slow each other):
1. two history runs of the whole suite with the plugin (`--laptime-report`);
2. `laptime plan --history` for each N from those two files (local, no server), with
   `--durations-out` giving pytest-split the same history's durations;
3. every planned job run for real `--repeats` times, each a fresh `python -m pytest` process
   measured from start to exit (as a CI job's test step), with its CPU share (user+system of
   the process and its children / wall), the load average before it, and the tests it ran
   compared with the tests the plan put in it;
4. pytest-split's groups (`--splits N --group i`, least_duration) the same way, under the
   plugin as well, so both split the same process: the same allocator (the plugin fixes
   glibc's malloc thresholds unless `--malloc dynamic`) and the same measuring cost.
It prints and writes (`--out`, default VENV/plan_accuracy.md) one markdown report: per N and
job predicted vs measured wall and error, per N predicted vs measured wait and machine time,
pytest-split's measured wait, and per run the CPU share and load. Raw numbers go beside it as
JSON. Timing on a shared machine is noisy: the load column says how noisy.

Before (the figures README.md quotes; tests/test_before_figures.py checks them):
- `up to 29% off`: jobs against their predicted wall with glibc's default allocator, the code
  at commit ed96cd950661 (the parent of 5e4a8f4, the plugin's fixed malloc thresholds),
  `python -m bench.bench_plan_accuracy` (docs/benchmarks.md, "Earlier rounds", round 2).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
# Pinned so reruns measure the same suite (what this registry served when this was written).
SUITE_PACKAGES = (
    "networkx==3.6.1",
    "numpy==2.4.6",
    "scipy==1.17.1",
    "pytest==9.2.0",
    "pytest-split==0.11.0",
)
# One `--pyargs` target: pytest names the files relative to the target's directory (it is
# outside the rootdir), so nodeids from several targets could collide.
FULL_TARGET = "networkx"
# --quick: one subpackage with uneven files and scipy first-use costs, ~10-20 s on one core.
QUICK_TARGET = "networkx.algorithms.flow"
# The plugin's allocator modes (laptime_ci.plugin_malloc): by default it fixes glibc's malloc
# thresholds while it measures, so a test costs the same in a fresh job process as in the
# long history run; `--malloc dynamic` measures what glibc's moving thresholds do instead.
MALLOC_MODES = ("pinned", "dynamic")
# pytest's exit codes for "ran, some tests failed" (1) and "ran fine" (0); 4/5 = did not run.
RAN_CODES = (0, 1)


@dataclass
class Run:
    """One pytest process: what it was, how long it took, what it got from the machine."""

    label: str
    args: list[str]
    wall_s: float
    cpu_s: float
    load_1m: float
    returncode: int
    tests_ran: int | None = None
    nodeids: list[str] = field(default_factory=list, repr=False)
    reference_s: float = float("nan")  # the reference loop just before (reference_loop_s)

    @property
    def cpu_share(self) -> float:
        """CPU time over wall: 1.0 = one core all the time; less = waiting or starved."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else float("nan")


def install(venv: Path) -> Path:
    """The suite's venv (created once, reused), with this checkout's plugin; its python."""
    python = venv / "bin" / "python"
    marker = venv / ".laptime-accuracy-ready"
    if not marker.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, *SUITE_PACKAGES], check=True)
        marker.write_text("\n".join(SUITE_PACKAGES) + "\n")
    # The plugin always from this checkout, so a rerun measures the current code.
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(REPO / "client")],
        check=True,
    )
    return python


def reference_loop_s() -> float:
    """Seconds of a fixed pure-Python loop, best of 3: the machine's speed just now. A shared
    VM's speed drifts (host contention the guest's load average and CPU share do not see), so
    each run is stamped with it and history and jobs can be compared on the same scale."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(3_000_000):
            total += i * i % 7
        best = min(best, time.perf_counter() - started)
    return best


def run_pytest(
    python: Path, cwd: Path, label: str, args: list[str], report: Path, malloc: str
) -> Run:
    """One fresh pytest process with the plugin writing `report` (allocator mode `malloc`),
    timed from spawn to exit, its rusage from wait4."""
    command = [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", *args]
    report.unlink(missing_ok=True)
    command += [f"--laptime-report={report}", f"--laptime-malloc={malloc}"]
    reference = reference_loop_s()
    load = os.getloadavg()[0]
    log = cwd / f"{label.replace(' ', '_').replace('/', '-')}.log"
    with log.open("w") as out:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    run = Run(label, args, wall, usage.ru_utime + usage.ru_stime, load, process.returncode)
    run.reference_s = reference
    if report.exists():
        tests = json.loads(report.read_text())["tests"]
        run.nodeids = sorted({t["nodeid"] for t in tests})
        run.tests_ran = len(run.nodeids)
    print(
        f"  {label}: {wall:.1f}s wall, cpu share {run.cpu_share:.2f}, load {load:.2f}, "
        f"reference {reference * 1000:.0f} ms, "
        f"rc {run.returncode}" + (f", {run.tests_ran} tests" if run.tests_ran is not None else ""),
        flush=True,
    )
    return run


def laptime_plan(reports: list[Path], n: int, rootdir: str, durations: Path) -> dict[str, Any]:
    """`laptime plan --history --jobs N --json` from the local history files."""
    laptime = shutil.which("laptime", path=str(Path(sys.executable).parent)) or "laptime"
    command = [laptime, "plan", *map(str, reports), "--history", "--jobs", str(n), "--json"]
    command += ["--invocation", "pyargs", "--rootdir", rootdir, "--durations-out", str(durations)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"laptime plan failed: {done.stderr or done.stdout}")
    plan: dict[str, Any] = json.loads(done.stdout)
    return plan


def error_pct(predicted: float, measured: float) -> float:
    """Signed error of a prediction, in % of the measurement."""
    return 100.0 * (predicted - measured) / measured if measured > 0 else float("nan")


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def _reps(runs: list[Run]) -> str:
    return " / ".join(f"{r.wall_s:.1f}" for r in runs)


def measure_plan(
    python: Path,
    work: Path,
    n: int,
    plan: dict[str, Any],
    repeats: int,
    history_ids: set[str],
    malloc: str,
) -> dict[str, Any]:
    """Run each planned job `repeats` times; per job and per pipeline numbers."""
    jobs = plan["jobs"]
    per_job: list[list[Run]] = []
    for i, job in enumerate(jobs, start=1):
        runs = []
        for rep in range(1, repeats + 1):
            report = work / f"plan{n}_job{i}_rep{rep}.json"
            runs.append(
                run_pytest(
                    python, work, f"N={n} job {i} rep {rep}", job["pytest_args"], report, malloc
                )
            )
        per_job.append(runs)
    ran = [set(runs[0].nodeids) for runs in per_job]
    union = set().union(*ran)
    problems = []
    for i, (job, runs) in enumerate(zip(jobs, per_job, strict=True), start=1):
        if any(r.returncode not in RAN_CODES for r in runs):
            problems.append(f"job {i} did not run (rc {[r.returncode for r in runs]})")
        if runs[0].tests_ran != job["n_tests"]:
            problems.append(f"job {i} ran {runs[0].tests_ran} tests, planned {job['n_tests']}")
    overlap = sum(len(s) for s in ran) - len(union)
    if overlap:
        problems.append(f"{overlap} tests ran in two jobs")
    if union != history_ids:
        problems.append(
            f"{len(history_ids - union)} history tests ran nowhere, "
            f"{len(union - history_ids)} tests ran that the history does not have"
        )
    waits = [max(runs[r].wall_s for runs in per_job) for r in range(repeats)]
    machines = [sum(runs[r].wall_s for runs in per_job) for r in range(repeats)]
    return {
        "n": n,
        "plan": {
            "verdict": plan["verdict"],
            "wait_s": plan["after"]["wait_s"],
            "machine_s": plan["after"]["machine_s"],
        },
        "jobs": [
            {
                "job": i,
                "n_tests": job["n_tests"],
                "members": len(job["members"]),
                "args": len(job["pytest_args"]),
                "predicted_wall_s": job["predicted_wall_s"],
                "runs": [asdict(r) | {"cpu_share": r.cpu_share, "nodeids": None} for r in runs],
            }
            for i, (job, runs) in enumerate(zip(jobs, per_job, strict=True), start=1)
        ],
        "measured_wait_s": waits,
        "measured_machine_s": machines,
        "problems": problems,
    }


def measure_pytest_split(
    python: Path,
    work: Path,
    n: int,
    targets: list[str],
    durations: Path,
    repeats: int,
    malloc: str,
) -> dict[str, Any]:
    """pytest-split's N groups from the same history's durations, each run `repeats` times,
    under the plugin too (the same allocator and measuring cost as laptime's jobs)."""
    per_group = []
    for group in range(1, n + 1):
        args = ["--pyargs", *targets, "--splits", str(n), "--group", str(group)]
        args += ["--splitting-algorithm", "least_duration", "--durations-path", str(durations)]
        per_group.append(
            [
                run_pytest(
                    python,
                    work,
                    f"pytest-split N={n} group {group} rep {rep}",
                    args,
                    work / f"split{n}_group{group}_rep{rep}.json",
                    malloc,
                )
                for rep in range(1, repeats + 1)
            ]
        )
    waits = [max(runs[r].wall_s for runs in per_group) for r in range(repeats)]
    machines = [sum(runs[r].wall_s for runs in per_group) for r in range(repeats)]
    return {
        "n": n,
        "groups": [[asdict(r) | {"cpu_share": r.cpu_share} for r in runs] for runs in per_group],
        "measured_wait_s": waits,
        "measured_machine_s": machines,
    }


def markdown(history: list[Run], results: list[dict[str, Any]], splits: dict[int, Any]) -> str:
    """The report: history runs, per-job and per-pipeline predicted vs measured."""
    lines = ["## History runs", ""]
    lines.append("| run | wall s | CPU s | CPU share | load 1m | reference ms | tests |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in history:
        lines.append(
            f"| {r.label} | {r.wall_s:.1f} | {r.cpu_s:.1f} | {r.cpu_share:.2f} | "
            f"{r.load_1m:.2f} | {r.reference_s * 1000:.0f} | {r.tests_ran} |"
        )
    lines += [
        "",
        "The reference loop (`reference_loop_s`, ms, lower = faster) is timed just before each "
        "run: it shows how the shared machine's speed drifted between the history and the jobs.",
    ]
    lines += ["", "## Jobs: predicted vs measured wall", ""]
    lines.append(
        "| N | job | tests | predicted s | measured s (reps) | error % (mean) | "
        "CPU share (reps) | load 1m (reps) | reference ms (reps) | error % at history speed |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    history_ref = _mean([r.reference_s for r in history])
    for res in results:
        for job in res["jobs"]:
            walls = [r["wall_s"] for r in job["runs"]]
            errs = [error_pct(job["predicted_wall_s"], w) for w in walls]
            shares = " / ".join(f"{r['cpu_share']:.2f}" for r in job["runs"])
            loads = " / ".join(f"{r['load_1m']:.2f}" for r in job["runs"])
            references = " / ".join(f"{r['reference_s'] * 1000:.0f}" for r in job["runs"])
            # Each run's wall rescaled to the machine speed the history ran at.
            at_speed = [
                error_pct(job["predicted_wall_s"], r["wall_s"] * history_ref / r["reference_s"])
                for r in job["runs"]
            ]
            measured = " / ".join(f"{w:.1f}" for w in walls)
            lines.append(
                f"| {res['n']} | {job['job']} | {job['n_tests']} | "
                f"{job['predicted_wall_s']:.1f} | {measured} | {_mean(errs):+.0f} | "
                f"{shares} | {loads} | {references} | {_mean(at_speed):+.0f} |"
            )
    lines += ["", "## Pipelines: wait and machine time", ""]
    lines.append(
        "| N | predicted wait s | measured wait s | error % | predicted machine s | "
        "measured machine s | error % | pytest-split wait s | laptime / pytest-split wait | "
        "runs OK |"
    )
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for res in results:
        wait, machine = _mean(res["measured_wait_s"]), _mean(res["measured_machine_s"])
        split = splits.get(res["n"])
        split_wait = _mean(split["measured_wait_s"]) if split else float("nan")
        lines.append(
            f"| {res['n']} | {res['plan']['wait_s']:.1f} | "
            f"{' / '.join(f'{w:.1f}' for w in res['measured_wait_s'])} | "
            f"{error_pct(res['plan']['wait_s'], wait):+.0f} | {res['plan']['machine_s']:.1f} | "
            f"{' / '.join(f'{m:.1f}' for m in res['measured_machine_s'])} | "
            f"{error_pct(res['plan']['machine_s'], machine):+.0f} | "
            f"{' / '.join(f'{w:.1f}' for w in split['measured_wait_s']) if split else '-'} | "
            f"{wait / split_wait:.2f} | {'; '.join(res['problems']) or 'yes'} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Install, take the history, plan, run every job and pytest-split's groups, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv", nargs="?", default="/tmp/laptime-accuracy", type=Path)
    parser.add_argument("--quick", action="store_true", help="a subset of the suite, N = 2")
    parser.add_argument("--jobs", default=None, help="job counts, e.g. 2,3,4 (default)")
    parser.add_argument("--repeats", type=int, default=None, help="runs per job (default 2)")
    parser.add_argument(
        "--split-repeats",
        type=int,
        default=None,
        help="runs per pytest-split group (default: --repeats)",
    )
    parser.add_argument("--out", type=Path, default=None, help="markdown report path")
    parser.add_argument(
        "--malloc",
        choices=MALLOC_MODES,
        default="pinned",
        help="the plugin's --laptime-malloc in every pytest process (default: its own)",
    )
    args = parser.parse_args(argv)
    from laptime_ci.plugin_malloc import ALLOCATOR_ENV

    for key in ALLOCATOR_ENV:
        os.environ.pop(key, None)  # the plugin's mode decides, not this shell's
    counts = [int(x) for x in (args.jobs or ("2" if args.quick else "2,3,4")).split(",")]
    repeats = args.repeats or (1 if args.quick else 2)
    split_repeats = args.split_repeats or repeats
    targets = [QUICK_TARGET if args.quick else FULL_TARGET]
    venv = args.venv.resolve()
    python = install(venv)
    work = venv / ("work-quick" if args.quick else "work")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    print(f"suite: pytest --pyargs {' '.join(targets)} in {venv}", flush=True)

    history: list[Run] = []
    reports = []
    for i in (1, 2):
        report = work / f"history{i}.json"
        history.append(
            run_pytest(python, work, f"history {i}", ["--pyargs", *targets], report, args.malloc)
        )
        reports.append(report)
    rootdir = _nodeid_base(python, targets[0])
    history_ids = set(history[0].nodeids)

    results, splits = [], {}
    for n in counts:
        durations = work / f"test_durations_{n}.json"
        plan = laptime_plan(reports, n, rootdir, durations)
        print(
            f"N={n}: {plan['verdict']}, predicted wait {plan['after']['wait_s']:.1f}s", flush=True
        )
        if plan["verdict"] != "split":
            nothing = [float("nan")]
            results.append(
                {"n": n, "plan": plan["after"], "jobs": [], "problems": [plan["reason"]],
                 "measured_wait_s": nothing, "measured_machine_s": nothing}
            )  # fmt: skip
            continue
        (work / f"plan{n}.json").write_text(json.dumps(plan, indent=2))
        results.append(measure_plan(python, work, n, plan, repeats, history_ids, args.malloc))
        splits[n] = measure_pytest_split(
            python, work, n, targets, durations, split_repeats, args.malloc
        )
        # What is done so far, in case a long run is stopped.
        partial = args.out or venv / "plan_accuracy_partial.md"
        write_report(partial, targets, argv, history, results, splits, final=False)

    out = args.out or venv / ("plan_accuracy_quick.md" if args.quick else "plan_accuracy.md")
    write_report(out, targets, argv, history, results, splits, final=True)
    return 1 if any(res["problems"] for res in results) else 0


def write_report(
    out: Path,
    targets: list[str],
    argv: list[str] | None,
    history: list[Run],
    results: list[dict[str, Any]],
    splits: dict[int, Any],
    *,
    final: bool,
) -> None:
    """The markdown report at `out` and the raw numbers beside it (`.json`)."""
    text = (
        f"# Plan accuracy: pytest --pyargs {' '.join(targets)}\n\n"
        f"`{' '.join(['python -m bench.bench_plan_accuracy', *(argv or sys.argv[1:])])}`; "
        f"{os.cpu_count()} CPUs; {', '.join(SUITE_PACKAGES)}\n\n"
        + markdown(history, results, splits)
    )
    out.write_text(text)
    raw = {
        "history": [asdict(r) | {"nodeids": None} for r in history],
        "plans": results,
        "pytest_split": splits,
    }
    out.with_suffix(".json").write_text(json.dumps(raw, indent=2, default=str))
    if final:
        print(text)
        print(f"written: {out} and {out.with_suffix('.json')}")


def _nodeid_base(python: Path, target: str) -> str:
    """The directory the history's nodeids are relative to: the `--pyargs` target's own
    (pytest names files outside its rootdir relative to the argument that found them)."""
    code = (
        "import importlib.util, os; "
        f"print(os.path.dirname(importlib.util.find_spec({target!r}).origin))"
    )
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


if __name__ == "__main__":
    raise SystemExit(main())
