"""Plans that come true on suites the planner was never tuned on: more-itertools, attrs,
Pygments and mpmath.

    .venv/bin/python -m bench.bench_plan_acceptance                  # both suites, N = 2, 3
    .venv/bin/python -m bench.bench_plan_acceptance /tmp/acc --suites attrs --jobs 2 --repeats 3

Each suite is its own sdist's `tests/` (pinned below) run against the same version's wheel, in a
venv at the path argument (default /tmp/laptime-accept) with this checkout's laptime_ci. Per
suite, with no measured job anywhere (no server, no calibration):
1. two history runs of the whole suite under `laptime-ci run -- pytest --laptime-report=...`
   (so the history measures the exit tail), pinned to core 0 with `taskset`;
2. `laptime plan --history --jobs N --json` from those two files (this checkout's code);
3. the plan's jobs run for real `--repeats` times, each a fresh `python -m pytest` process
   timed from spawn to exit, pinned one per core (`taskset -c K`) and run side by side, as
   many at once as there are cores (N above the core count: in waves of that many).
4. pytest-split's N groups (`--splits N --group G`, its `least_duration` algorithm, durations
   from the same two histories) run the same way right after each round of the plan's jobs,
   so the two pipelines' waits are compared round by round on the same machine minute.
The per-job error is (predicted - measured) / measured; the pipeline's wait is its longest job.
Markdown and raw JSON go to VENV/plan_acceptance.md and .json (or `--out`). The machine is
shared and noisy: each run is stamped with the load average and a reference loop's time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bench.bench_plan_accuracy import RAN_CODES, Run, error_pct, reference_loop_s

REPO = Path(__file__).resolve().parent.parent
# Test-only dependencies of the suites: hypothesis (attrs), pympler and cloudpickle (attrs),
# wcag-contrast-ratio (Pygments' contrast tests).
TOOLS = ("pytest==9.2.0", "hypothesis==6.170.27", "pympler", "cloudpickle", "wcag-contrast-ratio")
PYTEST_SPLIT = "pytest-split==0.11.0"


@dataclass(frozen=True)
class Suite:
    """A PyPI project whose sdist ships its tests."""

    name: str
    sdist: str  # pip requirement of the source distribution
    directory: str  # what the sdist unpacks to
    tests: str  # the test path inside it


SUITES = {
    "more-itertools": Suite(
        "more-itertools", "more-itertools==10.7.0", "more_itertools-10.7.0", "tests"
    ),
    "attrs": Suite("attrs", "attrs==26.1.0", "attrs-26.1.0", "tests"),
    # Longer jobs: Pygments (5,330 tests, ~15 s in one process) and mpmath (339 heavy tests,
    # ~40 s), where the fixed costs of a process weigh less than in the two above.
    "pygments": Suite("pygments", "Pygments==2.21.0", "pygments-2.21.0", "tests"),
    "mpmath": Suite("mpmath", "mpmath==1.3.0", "mpmath-1.3.0", "mpmath/tests"),
}


def install(venv: Path, suites: list[Suite]) -> tuple[Path, dict[str, Path]]:
    """The venv (created once) with the suites' wheels and tools, this checkout's plugin, and
    each suite's unpacked sdist; the venv's python and each suite's directory."""
    python = venv / "bin" / "python"
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # No-ops once installed; a venv made before a suite was added gets it here.
    subprocess.run([*pip, *TOOLS, *(s.sdist for s in suites), PYTEST_SPLIT], check=True)
    subprocess.run([*pip, "--no-deps", str(REPO / "client")], check=True)
    sources = venv / "src"
    sources.mkdir(exist_ok=True)
    where = {}
    for suite in suites:
        directory = sources / suite.directory
        if not directory.exists():
            subprocess.run(
                [
                    str(python),
                    "-m",
                    "pip",
                    "download",
                    "-q",
                    "--no-deps",
                    "--no-binary",
                    ":all:",
                    "-d",
                    str(sources),
                    suite.sdist,
                ],
                check=True,
            )
            (archive,) = sources.glob(f"{suite.directory}.tar.gz")
            with tarfile.open(archive) as tar:
                tar.extractall(sources, filter="data")
        where[suite.name] = directory
    return python, where


def _pytest(python: Path, args: list[str], report: Path) -> list[str]:
    return [
        str(python),
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *args,
        f"--laptime-report={report}",
    ]


def run_processes(
    commands: list[tuple[str, list[str], Path]], cwd: Path, cores: int
) -> tuple[list[Run], dict[str, float | None]]:
    """Run (label, command, report) side by side, command i pinned to core i % cores, at most
    `cores` at once; each timed from spawn to exit with its rusage. Also per label the
    run-queue wait its report measured (seconds the tests' thread had no CPU)."""
    done: list[Run] = []
    waits: dict[str, float | None] = {}
    for start in range(0, len(commands), cores):
        wave = commands[start : start + cores]
        reference = reference_loop_s()
        load = os.getloadavg()[0]
        started = []
        for core, (label, command, report) in enumerate(wave):
            report.unlink(missing_ok=True)
            log = (cwd / f"{label.replace(' ', '_').replace('/', '-')}.log").open("w")
            began = time.perf_counter()
            process = subprocess.Popen(
                ["taskset", "-c", str(core), *command], cwd=cwd, stdout=log, stderr=log
            )
            started.append((label, command, report, process, began, log))
        pending = {entry[3].pid: entry for entry in started}
        while pending:
            # Whichever job ends first: waiting in order would time an early one late.
            pid, status, usage = os.wait4(-1, 0)
            if pid not in pending:
                continue
            label, command, report, _process, began, log = pending.pop(pid)
            wall = time.perf_counter() - began
            log.close()
            cpu = usage.ru_utime + usage.ru_stime
            run = Run(label, command, wall, cpu, load, os.waitstatus_to_exitcode(status))
            run.reference_s = reference
            if report.exists():
                document = json.loads(report.read_text())
                run.nodeids = sorted({t["nodeid"] for t in document["tests"]})
                run.tests_ran = len(run.nodeids)
                waits[label] = document["session"].get("cpu_wait_s")
            print(
                f"  {label}: {wall:.2f}s wall, cpu share {run.cpu_share:.2f}, load {load:.2f}, "
                f"rc {run.returncode}, {run.tests_ran} tests",
                flush=True,
            )
            done.append(run)
    order = {label: k for k, (label, _command, _report) in enumerate(commands)}
    return sorted(done, key=lambda r: order[r.label]), waits


def laptime_plan(reports: list[Path], n: int) -> dict[str, Any]:
    """`laptime plan --history --jobs N --json` with this checkout's code."""
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{REPO / 'client'}"}
    entry = "import sys; from app.cli.main import main; sys.argv[0] = 'laptime'; main()"
    command = [sys.executable, "-c", entry, "plan", *map(str, reports), "--history"]
    command += ["--jobs", str(n), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"laptime plan failed: {done.stderr or done.stdout}")
    plan: dict[str, Any] = json.loads(done.stdout)
    if plan["verdict"] != "split":
        # Not worth it by the planner's own rule (10% less wait, at most a machine second
        # per second saved): the N-job plan it would make is what is checked here.
        plan = forced_plan(reports, n) | {"forced_from": plan["verdict"]}
    return plan


def forced_plan(reports: list[Path], n: int) -> dict[str, Any]:
    """`laptime plan`'s N-job plan from the same files, split whatever the gain."""
    from analysis.split.options import SplitOptions
    from analysis.split.plan import plan_splits
    from app.cli.local_reports import HISTORY_JOB, history_invocation, load_local, local_runner
    from app.schemas import split as answers

    data = load_local(tuple(map(str, reports)), "auto")
    runs = data.runs.copy()
    runs["job"] = HISTORY_JOB
    options = SplitOptions(
        jobs=(n, n),
        min_gain_frac=0.0,
        max_machine_per_wait=float("inf"),
        runner=local_runner(data),
        invocation=history_invocation(data, "auto", None),
    )
    plan = answers.SplitPlan.of(plan_splits(data.results, runs, options))
    forced: dict[str, Any] = plan.model_dump(
        mode="json", exclude_unset=True, exclude=set(answers.SERVER_FIELDS)
    )
    return forced


def measure_suite(
    python: Path, cwd: Path, suite: Suite, counts: list[int], repeats: int, cores: int
) -> dict[str, Any]:
    """History, plans and job runs of one suite."""
    work = cwd / "laptime-work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    reports = [work / f"history{i}.json" for i in (1, 2)]
    history = []
    for i, report in enumerate(reports, start=1):
        wrapped = [str(python), "-m", "laptime_ci.cli", "run", "--"]
        wrapped += _pytest(python, [suite.tests], report)
        history += run_processes([(f"{suite.name} history {i}", wrapped, report)], cwd, 1)[0]
    exits = [json.loads(r.read_text())["session"].get("exit_s") for r in reports]
    history_ids = set(history[0].nodeids)
    durations = split_durations(reports, work / "test_durations.json")
    plans = []
    for n in counts:
        plan = laptime_plan(reports, n)
        (work / f"plan{n}.json").write_text(json.dumps(plan, indent=2))
        forced = (
            f" (forced; laptime plan said {plan['forced_from']})" if "forced_from" in plan else ""
        )
        print(f"{suite.name} N={n}: {plan['verdict']}{forced}, wait {plan['after']['wait_s']:.2f}s")
        jobs = plan["jobs"]
        rounds = []
        split_rounds: list[list[Run]] = []
        round_waits: list[list[float | None]] = []
        for rep in range(1, repeats + 1):
            commands = [
                (
                    f"{suite.name} N={n} job {i} rep {rep}",
                    _pytest(python, list(job["pytest_args"]), work / f"n{n}_job{i}_rep{rep}.json"),
                    work / f"n{n}_job{i}_rep{rep}.json",
                )
                for i, job in enumerate(jobs, start=1)
            ]
            runs, waits = run_processes(commands, cwd, cores)
            rounds.append(runs)
            round_waits.append([waits.get(r.label) for r in runs])
            groups = [
                (
                    f"{suite.name} N={n} pytest-split group {g} rep {rep}",
                    _pytest(python, split_args(suite, n, g, durations), work / f"s{n}_{g}.json"),
                    work / f"s{n}_{g}.json",
                )
                for g in range(1, n + 1)
            ]
            split_rounds.append(run_processes(groups, cwd, cores)[0])
        problems = []
        for runs in [*rounds, *split_rounds]:
            ran = [set(r.nodeids) for r in runs]
            union = set().union(*ran)
            if sum(len(s) for s in ran) != len(union):
                problems.append("a test ran in two jobs")
            if union != history_ids:
                problems.append(f"{len(history_ids ^ union)} tests differ from the history's")
            problems += [
                f"{r.label}: rc {r.returncode}" for r in runs if r.returncode not in RAN_CODES
            ]
        plans.append(
            {
                "n": n,
                "verdict": plan["verdict"],
                "forced_from": plan.get("forced_from"),
                "predicted_wait_s": plan["after"]["wait_s"],
                "expected_error": plan.get("expected_error"),
                "jobs": [
                    {
                        "job": i,
                        "n_tests": job["n_tests"],
                        "predicted_wall_s": job["predicted_wall_s"],
                        "parts": job.get("parts"),
                        "measured_wall_s": [runs[i - 1].wall_s for runs in rounds],
                        # The same wall less the seconds the kernel kept its tests from a CPU.
                        "quiet_wall_s": [
                            runs[i - 1].wall_s - (w[i - 1] or 0.0)
                            for runs, w in zip(rounds, round_waits, strict=True)
                        ],
                        "runs": [asdict(runs[i - 1]) | {"nodeids": None} for runs in rounds],
                    }
                    for i, job in enumerate(jobs, start=1)
                ],
                "measured_wait_s": [max(r.wall_s for r in runs) for runs in rounds],
                "pytest_split_wait_s": [max(r.wall_s for r in runs) for runs in split_rounds],
                "problems": sorted(set(problems)),
            }
        )
    return {
        "suite": suite.sdist,
        "history": [asdict(r) | {"nodeids": None} for r in history],
        "history_exit_s": exits,
        "plans": plans,
    }


def split_durations(reports: list[Path], path: Path) -> Path:
    """pytest-split's durations file from the histories: each test's mean duration."""
    seconds: dict[str, list[float]] = {}
    for report in reports:
        for test in json.loads(report.read_text())["tests"]:
            if test.get("duration_s") is not None:
                seconds.setdefault(test["nodeid"], []).append(float(test["duration_s"]))
    path.write_text(json.dumps({k: statistics.fmean(v) for k, v in sorted(seconds.items())}))
    return path


def split_args(suite: Suite, n: int, group: int, durations: Path) -> list[str]:
    """pytest-split's group `group` of `n`, with its best algorithm for a balanced wait."""
    return [
        suite.tests,
        "--splits",
        str(n),
        "--group",
        str(group),
        "--durations-path",
        str(durations),
        "--splitting-algorithm",
        "least_duration",
    ]


def summary(results: list[dict[str, Any]], key: str = "measured_wall_s") -> dict[str, Any]:
    """Per job run its signed error against `key`; the share within 10% and the median."""
    errors = [
        error_pct(job["predicted_wall_s"], wall)
        for res in results
        for plan in res["plans"]
        for job in plan["jobs"]
        for wall in job[key]
    ]
    within = sum(abs(e) <= 10 for e in errors)
    return {
        "job_runs": len(errors),
        "within_10pct": within,
        "median_error_pct": statistics.median(errors) if errors else float("nan"),
        "worst_error_pct": max(errors, key=abs) if errors else float("nan"),
    }


def markdown(results: list[dict[str, Any]], command: str) -> str:
    """The report: history, per job predicted vs measured, per pipeline the wait."""
    lines = [f"`{command}`; {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f} at the end", ""]
    for res in results:
        lines += [f"## {res['suite']}", ""]
        walls = ", ".join(f"{h['wall_s']:.2f}" for h in res["history"])
        exits = ", ".join(f"{e:.2f}" for e in res["history_exit_s"] if e is not None)
        lines += [f"History: two runs of {walls} s (exit tail measured {exits} s).", ""]
        forced = [str(p["n"]) for p in res["plans"] if p.get("forced_from")]
        if forced:
            lines += [
                f"N = {', '.join(forced)}: `laptime plan` said not worth it; the N-job plan it "
                "would make (split whatever the gain) was run.",
                "",
            ]
        lines += [
            "| N | job | tests | predicted s | measured s (reps) | error % (reps) | "
            "measured less run-queue wait s | error % |"
        ]
        lines += ["|---|---|---|---|---|---|---|---|"]
        for plan in res["plans"]:
            for job in plan["jobs"]:
                measured = " / ".join(f"{w:.2f}" for w in job["measured_wall_s"])
                errs = " / ".join(
                    f"{error_pct(job['predicted_wall_s'], w):+.1f}" for w in job["measured_wall_s"]
                )
                quiet = " / ".join(f"{w:.2f}" for w in job["quiet_wall_s"])
                quiet_errs = " / ".join(
                    f"{error_pct(job['predicted_wall_s'], w):+.1f}" for w in job["quiet_wall_s"]
                )
                lines.append(
                    f"| {plan['n']} | {job['job']} | {job['n_tests']} | "
                    f"{job['predicted_wall_s']:.2f} | {measured} | {errs} | {quiet} | "
                    f"{quiet_errs} |"
                )
        lines += [
            "",
            "| N | predicted wait s | measured wait s (reps) | error % | pytest-split wait s "
            "(reps) | laptime / pytest-split (reps) | runs OK |",
        ]
        lines += ["|---|---|---|---|---|---|---|"]
        for plan in res["plans"]:
            waits = plan["measured_wait_s"]
            split_waits = plan.get("pytest_split_wait_s") or []
            err = error_pct(plan["predicted_wait_s"], statistics.fmean(waits))
            ratios = " / ".join(f"{a / b:.2f}" for a, b in zip(waits, split_waits, strict=False))
            lines.append(
                f"| {plan['n']} | {plan['predicted_wait_s']:.2f} | "
                f"{' / '.join(f'{w:.2f}' for w in waits)} | {err:+.1f} | "
                f"{' / '.join(f'{w:.2f}' for w in split_waits)} | {ratios} | "
                f"{'; '.join(plan['problems']) or 'yes'} |"
            )
        lines.append("")
    for key, what in (("measured_wall_s", "measured"), ("quiet_wall_s", "less run-queue wait")):
        s = summary(results, key)
        lines.append(
            f"All job runs ({what}): {s['within_10pct']} of {s['job_runs']} within 10% of "
            f"prediction, median error {s['median_error_pct']:+.1f}%, "
            f"worst {s['worst_error_pct']:+.1f}%."
        )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Install, take the histories, plan, run every job side by side, report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("venv", nargs="?", default="/tmp/laptime-accept", type=Path)
    parser.add_argument("--suites", default=",".join(SUITES), help="comma-separated")
    parser.add_argument("--jobs", default="2,3", help="job counts, e.g. 2,3")
    parser.add_argument("--repeats", type=int, default=2, help="rounds per plan")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    from laptime_ci.plugin_malloc import ALLOCATOR_ENV

    for key in ALLOCATOR_ENV:
        os.environ.pop(key, None)
    for key in [k for k in os.environ if k.startswith("LAPTIME_")]:
        os.environ.pop(key)
    suites = [SUITES[name] for name in args.suites.split(",")]
    counts = [int(x) for x in args.jobs.split(",")]
    venv = args.venv.resolve()
    python, where = install(venv, suites)
    cores = len(os.sched_getaffinity(0))
    results = [measure_suite(python, where[s.name], s, counts, args.repeats, cores) for s in suites]
    command = " ".join(["python -m bench.bench_plan_acceptance", *(argv or sys.argv[1:])])
    text = markdown(results, command)
    out = args.out or venv / "plan_acceptance.md"
    out.write_text(text)
    out.with_suffix(".json").write_text(
        json.dumps(
            {
                "results": results,
                "summary": summary(results),
                "summary_less_wait": summary(results, "quiet_wall_s"),
            },
            indent=2,
            default=str,
        )
    )
    print(text)
    print(f"written: {out} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
