"""A CI job's wall predicted from its parts: what a split job will really take.
The terms are defined in docs/planner.md#the-model.

    wall = setup_factor x (ci_setup + startup + collect + first_use + exit) + test_factor x tests

- ci_setup: the CI job's fixed cost outside pytest, median over runs of
  `job_wall_s - wall_s - startup_s` (job wall minus the pytest process). Without a job wall
  the planner's overhead estimate (job wall - test time) stands in, flagged; when the run's
  collection time is known that estimate is all pytest (collection + bookkeeping), which the
  other parts already count, so ci_setup is 0 (flagged).
- startup: interpreter start to collection start, median `startup_s` of the runs.
- collect: collecting the job's OWN files, the sum of `collect_by_file` over them (median over
  runs), plus what the run's collection spent outside any file (`collect_s` minus the sum over
  all its files: conftest imports, the directory walk), which every job pays; else the run's
  `collect_s` x the job's share of the collected tests.
- first_use: per file the job touches, what its first test (by `seq`, per process) paid on
  top of the file's other tests: its setup minus their median setup, floored at 0. A file
  split over k jobs pays it k times. It is taken out of that test's own estimate.
- first use inside a call: a test whose time, when it ran first in its process (a split
  job's or the loop's), was consistently above its median elsewhere (every such run at least
  CALL_FIRST_USE_MIN_S and CALL_FIRST_USE_MIN_FRAC above it, in CALL_FIRST_USE_MIN_RUNS runs
  or more) starts something in its call that an earlier test started in the others (a worker
  pool, a compile, a lazy import). A job holding it is a fresh process where nothing did, so
  the test's estimate carries the excess (median first minus median elsewhere) and the job
  running it pays it, once.
- exit: the process's exit after its session (reports, interpreter shutdown, worker pools),
  which the plugin inside the process cannot time: the job's median `exit_s` measured by
  `laptime-ci run`, else the project's median, else EXIT_TAIL_DEFAULT_S for a plugin history
  (listed missing), else 0. Part of it (EXIT_FIXED_SHARE) every process pays; the rest grows
  with what the session ran (objects to free, pools to stop), so a job pays that part in
  proportion to its share of the suite's tests. Each run's measured tail is first brought to
  the whole suite's by the same rule, so runs of any size share one measure, and to a quiet
  machine's by the run's CPU share (below): shutdown is interpreter work.
- tests: the tests' estimates (median of recent results) after removing first-use costs and
  normalising to a quiet machine, divided by the xdist workers, plus per-test bookkeeping
  (session wall - collection - test time, per test) when collection time is known.

Quiet-machine normalisation. Where the plugin read the kernel's run-queue delay (`cpu_wait_s`: the
seconds the test's thread was runnable but had no CPU), a quiet machine would not have taken
them: quiet = wall - wait, and the run's share is 1 - its tests' wait / their wall. This holds
for tests running threads too, which the estimate below cannot correct. Without it, a history
run that got a CPU share s < 1 per process (a busy machine) slowed only the CPU part of each
test. With cpu and wall of a result:
    cpu_wall = min(wall, cpu / s);  quiet = wall - cpu_wall x (1 - s)
so a CPU-bound test's quiet wall is its cpu time, a sleep/I/O-bound test (cpu ~ 0) keeps its
wall, and at s = 1 nothing changes. s per run = min(1, max(run cpu_s / (wall_s x workers),
wall-weighted 90th percentile of its tests' cpu/wall)): both are lower bounds of the share a
single-threaded process got (I/O and startup dilute them), so the larger is taken; tests with
threads (cpu/wall > 1) cap it at 1, i.e. no correction where contention cannot be told apart.

Parallelism (machine sizing). A test's cores used u = cpu / its history wall (not the quiet
one: threads filling every core make the main thread wait), clipped to [1, C]
where C is the cores per process of the history machine (unknown: the fewest that fit the
largest u, allowing 10% tick error). Tests under 50 ms count as serial: CPU time comes in
scheduler ticks (4 ms at HZ=250), so their ratio is chance. Amdahl with the test's threads
following the machine's cores: p = (1 - 1/u) / (1 - 1/C), serial time T1 = quiet x u, and on
c cores T1 x ((1 - p) + p / min(c, C)). Summed over a job's tests this is S + P / min(c, C)
(`ParallelProfile`); without cpu data P = 0 and vCPUs change nothing.

Allocator. Under glibc's dynamic mmap threshold a long history process serves large blocks
from its heap that a fresh job process maps and faults in each time; which earlier tests
warmed it is not in the history, so nothing is corrected: `malloc` is listed missing unless
every run's allocator was fixed (`MALLOC_FIXED`).

Why one module (about 640 lines): the parts are fitted from the same runs and depend on each
other (a run's tail is normalised with its CPU share, first-use costs come out of the tests'
estimates the tests part uses), and the equation above is checked against its fits here;
calibration and the heap model live in their own modules.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis.errors import AnswerError
from analysis.estimate import result_durations
from analysis.split.heap_model import HeapHistory, fit_heap_profile
from model.frames import MALLOC_STATES, numeric_column

# The inputs the model reads beyond JUnit's per-test wall; each absent one is named.
MODEL_INPUTS: tuple[str, ...] = (
    "job_wall_s",
    "startup_s",
    "collect_by_file",
    "collect_s",
    "seq",
    "cpu_s",
    "cpu_wait_s",
    "heap_objects",
    "malloc",
    "exit_s",
)
# Allocator states under which a fresh job process allocates as the history process did: glibc's
# thresholds fixed (by the plugin or the environment), or not glibc. Not "dynamic".
MALLOC_FIXED: frozenset[str] = frozenset(MALLOC_STATES) - {"dynamic"}
SHARE_QUANTILE = 0.9
MIN_SHARE = 0.05  # below this the history is noise, not a measurement


@dataclass(frozen=True)
class JobParts:
    """One job's predicted wall and its parts (seconds; factors already applied)."""

    ci_setup_s: float
    startup_s: float
    collect_s: float
    first_use_s: float
    tests_s: float
    cpu_share: float | None  # the history's median CPU share the tests were normalised from
    inputs_missing: tuple[str, ...]
    setup_factor: float = 1.0
    test_factor: float = 1.0
    exit_s: float = 0.0  # session end to process exit (reports, shutdown, worker pools)

    @property
    def fixed_s(self) -> float:
        """Everything but the tests: what the job pays however few tests it runs."""
        return self.ci_setup_s + self.startup_s + self.collect_s + self.first_use_s + self.exit_s

    @property
    def wall_s(self) -> float:
        """The predicted job wall."""
        return self.fixed_s + self.tests_s


@dataclass(frozen=True)
class JobModel:
    """What the history says about a cell's jobs; `predict` prices one job from it."""

    results: pd.DataFrame  # the input results, duration_s quiet and without first-use costs
    first_use_s: dict[str, float]  # file -> seconds its first test pays on top of the others
    collect_by_file_s: dict[str, float]  # file -> collection seconds
    collect_run_s: float | None  # median whole-run collection
    collect_outside_files_s: float | None  # median of collect_s - sum of collect_by_file
    collected_tests: float | None  # median tests collected per run
    ci_setup_s: float | None  # measured (job wall - pytest process), median of all runs
    startup_s: float | None
    bookkeeping_per_test_s: float | None
    cpu_share: float | None
    inputs_missing: tuple[str, ...]
    setup_factor: float = 1.0
    test_factor: float = 1.0
    # Per job name: a GPU job's setup is not a lint job's. Jobs without their own use the above.
    ci_setup_by_job: dict[str, float] = field(default_factory=dict)
    startup_by_job: dict[str, float] = field(default_factory=dict)
    # Per nodeid: heap-bound seconds and the heap the history ran them at (split/heap_model.py);
    # None when no test's time follows the heap or the runs lack the heap census.
    heap: HeapHistory | None = None
    # Session end to process exit, which a plugin history's in-process job wall misses:
    # measured (`laptime-ci run`) per job, else the project's median, else EXIT_TAIL_DEFAULT_S.
    exit_s: float = 0.0
    exit_by_job: dict[str, float] = field(default_factory=dict)
    exit_suite_tests: float | None = None  # the suite's size the exit tails are scaled to
    # nodeid -> seconds its call pays when it runs first in a process (see the module doc);
    # already in that test's estimate in `results`.
    call_first_use_s: dict[str, float] = field(default_factory=dict)

    def file_costs(self, files: pd.Series) -> pd.Series:
        """file -> what one more job touching it pays again: first use + collection (x setup
        factor). `files` is the file of every test (its counts scale the collection fallback)."""
        counts = files.astype(str).value_counts()
        first_use = pd.Series(self.first_use_s, dtype="float64").reindex(counts.index).fillna(0.0)
        if self.collect_by_file_s:
            collect = (
                pd.Series(self.collect_by_file_s, dtype="float64").reindex(counts.index).fillna(0.0)
            )
        elif self.collect_run_s is not None and self.collected_tests:
            collect = counts.astype("float64") * (self.collect_run_s / self.collected_tests)
        else:
            collect = pd.Series(0.0, index=counts.index)
        return ((first_use + collect) * self.setup_factor).astype("float64")

    def predict(
        self,
        *,
        files: Iterable[str],
        n_tests: int,
        test_s: float,
        workers: int,
        overhead_s: float,
        overhead_given: bool = False,
        job: str | None = None,
    ) -> JobParts:
        """Parts of a job running `n_tests` tests of `files` whose estimates sum to `test_s`.

        `overhead_s` is the planner's setup estimate (job wall - test time), the fallback for
        the CI setup; `overhead_given` means the user set it, so it is the CI setup as is.
        `job` names the job whose own setup and startup apply (today's, or the one a new job
        inherits from)."""
        measured_setup = self.ci_setup_by_job.get(job or "", self.ci_setup_s)
        startup = self.startup_by_job.get(job or "", self.startup_s)
        exit_tail = self.exit_by_job.get(job or "", self.exit_s) * exit_scale(
            n_tests, self.exit_suite_tests
        )
        missing = list(self.inputs_missing)
        unique = set(files)
        if overhead_given:
            ci_setup = overhead_s
        elif measured_setup is not None:
            ci_setup = measured_setup
        else:
            # The overhead is pytest's own time when collection is measured: counted below.
            ci_setup = 0.0 if self.collect_run_s is not None else overhead_s
        # Plain dict lookups: this runs for every job of every candidate plan.
        if self.collect_by_file_s:
            collect = sum(self.collect_by_file_s.get(f, 0.0) for f in unique)
            collect += self.collect_outside_files_s or 0.0
        elif self.collect_run_s is not None and self.collected_tests:
            collect = self.collect_run_s * min(n_tests / self.collected_tests, 1.0)
        else:
            collect = 0.0
        first_use = sum(self.first_use_s.get(f, 0.0) for f in unique)
        workers = max(workers, 1)
        tests = test_s / workers + (self.bookkeeping_per_test_s or 0.0) * n_tests / workers
        return JobParts(
            ci_setup_s=self.setup_factor * ci_setup,
            startup_s=self.setup_factor * (startup or 0.0),
            collect_s=self.setup_factor * collect,
            first_use_s=self.setup_factor * first_use,
            tests_s=self.test_factor * tests,
            exit_s=self.setup_factor * exit_tail,
            cpu_share=self.cpu_share,
            inputs_missing=tuple(missing),
            setup_factor=self.setup_factor,
            test_factor=self.test_factor,
        )


def _median(values: pd.Series) -> float | None:
    known = values.dropna()
    return float(known.median()) if len(known) else None


def _median_by(values: pd.Series, keys: pd.Series) -> dict[str, float]:
    """key -> median of the known values (keys with none are left out)."""
    medians = values.groupby(keys.to_numpy()).median().dropna()
    return {str(k): float(v) for k, v in medians.items()}


def quiet_wall(wall: pd.Series, cpu: pd.Series, share: pd.Series) -> pd.Series:
    """A result's wall on a quiet machine: only its CPU part was slowed by the share it got."""
    s = share.clip(lower=MIN_SHARE, upper=1.0)
    cpu_wall = (cpu / s).where(cpu / s < wall, wall)
    quiet: pd.Series = wall - cpu_wall * (1.0 - s)
    return quiet.where(cpu.notna() & share.notna() & wall.notna(), wall)


def run_cpu_shares(results: pd.DataFrame, runs: pd.DataFrame) -> pd.Series:
    """run_id -> CPU share per process the run got (NaN without CPU data); see module doc."""
    wall = result_durations(results)
    ratio = (numeric_column(results, "cpu_s") / wall).where(wall > 0)
    frame = pd.DataFrame({"run_id": results["run_id"].to_numpy(), "r": ratio, "w": wall})
    frame = frame.dropna().sort_values(["run_id", "r"], kind="stable")
    cum = frame.groupby("run_id")["w"].cumsum()
    total = frame.groupby("run_id")["w"].transform("sum")
    at_q = frame[cum >= SHARE_QUANTILE * total]
    per_test = at_q.groupby("run_id")["r"].first()
    workers = numeric_column(runs, "xdist_workers").fillna(1.0).clip(lower=1.0)
    run_ratio = numeric_column(runs, "cpu_s") / (numeric_column(runs, "wall_s") * workers)
    by_run = pd.Series(run_ratio.to_numpy(), index=runs["run_id"].to_numpy())
    by_run = by_run[~by_run.index.duplicated()]
    both = pd.concat([by_run, per_test.reindex(by_run.index)], axis=1).max(axis=1, skipna=True)
    # The kernel's word, where every test of the run has it, over the estimate.
    waits = pd.DataFrame(
        {
            "run_id": results["run_id"].to_numpy(),
            "wait": numeric_column(results, "cpu_wait_s"),
            "w": wall,
        }
    )
    sums = waits.groupby("run_id").agg(
        wait=("wait", "sum"), known=("wait", "count"), w=("w", "sum"), n=("w", "size")
    )
    told = sums[(sums["known"] == sums["n"]) & (sums["w"] > 0)]
    both.update(1.0 - told["wait"] / told["w"])
    return both.clip(lower=MIN_SHARE, upper=1.0)


def _first_use(results: pd.DataFrame, quiet_factor: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(per result: first-use seconds, quiet; per file: median over processes and runs)."""
    seq = numeric_column(results, "seq")
    setup = numeric_column(results, "setup_s")
    frame = pd.DataFrame(
        {
            "run_id": results["run_id"].to_numpy(),
            "worker": results["worker"].fillna("").astype(str).to_numpy()
            if "worker" in results.columns
            else "",
            "file": results["file"].astype(str).to_numpy(),
            "seq": seq.to_numpy(),
            "setup": setup.to_numpy(),
        },
        index=results.index,
    )
    frame = frame[frame["seq"].notna()]
    zero = pd.Series(0.0, index=results.index)
    if frame.empty:
        return zero, pd.Series(dtype="float64")
    keys = ["run_id", "worker", "file"]
    first_seq = frame.groupby(keys)["seq"].transform("min")
    is_first = frame["seq"] == first_seq
    others = frame[~is_first].groupby(keys)["setup"].median().rename("others")
    firsts = frame[is_first].join(others, on=keys)
    # A file with one test in the process: nothing to compare with, so nothing is moved.
    fu = (firsts["setup"] - firsts["others"]).clip(lower=0.0).fillna(0.0)
    fu = fu * quiet_factor.reindex(fu.index).fillna(1.0)
    per_result = zero.copy()
    per_result.loc[fu.index] = fu.to_numpy()
    per_process = firsts.assign(fu=fu)
    per_run = per_process.groupby(["run_id", "file"])["fu"].median()
    return per_result, per_run.groupby(level="file").median()


CALL_FIRST_USE_MIN_S = 0.05
CALL_FIRST_USE_MIN_FRAC = 0.25
CALL_FIRST_USE_MIN_RUNS = 2


def first_in_process(results: pd.DataFrame) -> pd.Series:
    """Per result: True for the first test (lowest `seq`) its process ran."""
    seq = numeric_column(results, "seq")
    worker = (
        results["worker"].fillna("").astype(str)
        if "worker" in results.columns
        else pd.Series("", index=results.index)
    )
    first = seq.groupby([results["run_id"], worker]).transform("min")
    return (seq == first) & seq.notna()


def call_first_use(results: pd.DataFrame, durations: pd.Series) -> pd.Series:
    """nodeid -> seconds a test pays when it runs first in its process, over its median
    elsewhere, for the tests that did so consistently (module doc); `durations` per result."""
    frame = pd.DataFrame(
        {
            "nodeid": results["nodeid"].astype(str),
            "first": first_in_process(results),
            "s": durations,
        }
    )[numeric_column(results, "seq").notna() & durations.notna()]
    if frame.empty:
        return pd.Series(dtype="float64")
    first = frame["first"]
    firsts = frame[first].groupby("nodeid")["s"].agg(["min", "median", "size"])
    elsewhere = frame[~first].groupby("nodeid")["s"].median().rename("elsewhere")
    both = firsts.join(elsewhere, how="inner")
    floor = np.maximum(CALL_FIRST_USE_MIN_S, CALL_FIRST_USE_MIN_FRAC * both["elsewhere"])
    steady = (both["size"] >= CALL_FIRST_USE_MIN_RUNS) & (both["min"] - both["elsewhere"] >= floor)
    kept = both[steady]
    return (kept["median"] - kept["elsewhere"]).astype("float64")


def _collect_by_file(runs: pd.DataFrame) -> pd.Series:
    """file -> median collection seconds over the runs that recorded it."""
    if "collect_by_file" not in runs.columns:
        return pd.Series(dtype="float64")
    rows = [
        (str(file), float(seconds))
        for value in runs["collect_by_file"]
        if isinstance(value, dict)
        for file, seconds in value.items()
        if isinstance(seconds, int | float) and math.isfinite(seconds) and seconds >= 0
    ]
    if not rows:
        return pd.Series(dtype="float64")
    frame = pd.DataFrame(rows, columns=["file", "s"])
    return frame.groupby("file")["s"].median()


def _files_collect_sum(runs: pd.DataFrame) -> pd.Series:
    """Per run: the sum of its `collect_by_file` (NaN where it has none)."""
    if "collect_by_file" not in runs.columns:
        return pd.Series(np.nan, index=runs.index, dtype="float64")
    return (
        runs["collect_by_file"]
        .map(
            lambda value: (
                math.fsum(float(v) for v in value.values() if isinstance(v, int | float))
                if isinstance(value, dict) and value
                else np.nan
            )
        )
        .astype("float64")
    )


def malloc_unknown(runs: pd.DataFrame) -> bool:
    """True unless every run says its allocator was fixed (MALLOC_FIXED): under glibc's dynamic
    thresholds, or unsaid, what a fresh job process's allocations cost is not in the history."""
    if "malloc" not in runs.columns or runs.empty:
        return True
    return not bool(runs["malloc"].isin(MALLOC_FIXED).all())


def fit_job_model(
    results: pd.DataFrame,
    runs: pd.DataFrame,
    *,
    setup_factor: float = 1.0,
    test_factor: float = 1.0,
) -> JobModel:
    """Read the parts the history measured (NaN columns or absent ones = unknown, listed)."""
    for name, factor in (("setup_factor", setup_factor), ("test_factor", test_factor)):
        if not math.isfinite(factor) or factor <= 0:
            raise AnswerError(f"{name} must be a positive number, got {factor}")
    missing: list[str] = []
    wall = result_durations(results)
    cpu = numeric_column(results, "cpu_s")
    shares = run_cpu_shares(results, runs)
    share_of_result = results["run_id"].map(shares).astype("float64")
    wait = numeric_column(results, "cpu_wait_s")
    quiet = (
        (wall - wait).clip(lower=0.0).where(wait.notna(), quiet_wall(wall, cpu, share_of_result))
    )
    if cpu.isna().all() or shares.isna().all():
        missing.append("cpu_s")
    if wait.isna().all():
        missing.append("cpu_wait_s")
    quiet_factor = (quiet / wall).where(wall > 0)
    fu_result, fu_file = _first_use(results, quiet_factor)
    if numeric_column(results, "seq").isna().all():
        missing.append("seq")
    adjusted = results.copy()
    plain = (quiet - fu_result).clip(lower=0.0)
    call_fu = call_first_use(results, plain.where(wall.notna()))
    # The test pays it in the job that runs it: every result of it carries it, so its
    # estimate is what a fresh process measured, whichever runs the history has most of.
    carries = results["nodeid"].astype(str).map(call_fu).fillna(0.0)
    carries = carries.where(~first_in_process(results), 0.0)
    adjusted["duration_s"] = (plain + carries).where(wall.notna())
    if "cpu_s" in adjusted.columns:
        adjusted["cpu_s"] = cpu  # kept for the parallelism profile
    run_wall = numeric_column(runs, "wall_s")
    startup = numeric_column(runs, "startup_s")
    job_wall = numeric_column(runs, "job_wall_s")
    collect = numeric_column(runs, "collect_s")
    outside = (job_wall - run_wall - startup.fillna(0.0)).clip(lower=0.0)
    job_names = runs["job"].astype(str)
    if job_wall.isna().all():
        missing.append("job_wall_s")
    if startup.isna().all():
        missing.append("startup_s")
    by_file = _collect_by_file(runs)
    if by_file.empty:
        missing.append("collect_by_file")
    if collect.isna().all():
        missing.append("collect_s")
    if numeric_column(runs, "heap_objects_collected").isna().all():
        missing.append("heap_objects")
    if malloc_unknown(runs):
        missing.append("malloc")
    test_sum = wall.groupby(results["run_id"]).sum()
    n_tests = results.groupby("run_id").size()
    run_ids = runs["run_id"].to_numpy()
    suite_tests = float(n_tests.max()) if len(n_tests) else None
    run_tests = pd.Series(n_tests.reindex(run_ids).to_numpy(), index=runs.index, dtype="float64")
    # Each run's tail as the whole suite's on a quiet machine: a small job's tail says less of
    # a full one's, and a run that got a share s of its core exited 1/s slower (CPU work).
    run_share = pd.Series(runs["run_id"].map(shares).to_numpy(), index=runs.index, dtype="float64")
    exits = (
        numeric_column(runs, "exit_s").where(lambda v: v >= 0)
        * run_share.fillna(1.0).clip(lower=MIN_SHARE, upper=1.0)
        / exit_scale_of(run_tests, suite_tests)
    )
    if exits.isna().all():
        missing.append("exit_s")
    workers = numeric_column(runs, "xdist_workers").fillna(1.0).clip(lower=1.0).to_numpy()
    bookkeeping = (
        run_wall.to_numpy() - collect.to_numpy() - test_sum.reindex(run_ids).to_numpy() / workers
    ).clip(min=0.0) / n_tests.reindex(run_ids).to_numpy()
    collected = numeric_column(runs, "collected_tests")
    return JobModel(
        results=adjusted,
        first_use_s={str(k): float(v) for k, v in fu_file.items()},
        collect_by_file_s={str(k): float(v) for k, v in by_file.items()},
        collect_run_s=_median(collect),
        collect_outside_files_s=_median((collect - _files_collect_sum(runs)).clip(lower=0.0)),
        collected_tests=_median(collected) or _median(n_tests.astype("float64")),
        ci_setup_s=_median(outside),
        startup_s=_median(startup),
        ci_setup_by_job=_median_by(outside, job_names),
        startup_by_job=_median_by(startup, job_names),
        bookkeeping_per_test_s=_median(pd.Series(bookkeeping, dtype="float64")),
        cpu_share=_median(shares),
        inputs_missing=tuple(name for name in MODEL_INPUTS if name in missing),
        setup_factor=setup_factor,
        test_factor=test_factor,
        heap=fit_heap_profile(results, runs, quiet_factor),
        exit_s=exit_tail_s(runs, exits),
        exit_by_job=_median_by(exits, job_names),
        exit_suite_tests=suite_tests,
        call_first_use_s={str(k): float(v) for k, v in call_fu.items()},
    )


# A job process's exit after its pytest session (reports written, interpreter shutdown, a
# library's worker pool stopped), measured on a scientific-Python suite: 0.5-1.2 s per job
# run, 1.4 s in its histories. The default until a project's runs measure it.
EXIT_TAIL_DEFAULT_S = 1.0
# The part of a whole suite's exit tail that a process pays whatever it ran (pytest's and the
# interpreter's own shutdown), measured on more-itertools 10.7: a job of 47 of its 671 tests
# took 0.42 s to exit where the whole suite took 0.70 s; attrs 26.1 (0.08-0.19 s against
# 0.20-0.23 s) puts it lower, so this errs towards charging a small job too much.
EXIT_FIXED_SHARE = 0.6


def exit_scale(n_tests: float, suite_tests: float | None) -> float:
    """A job's exit tail as a fraction of the whole suite's (see the module doc)."""
    if not suite_tests:
        return 1.0
    return EXIT_FIXED_SHARE + (1.0 - EXIT_FIXED_SHARE) * min(max(n_tests, 0.0) / suite_tests, 1.0)


def exit_scale_of(n_tests: pd.Series, suite_tests: float | None) -> pd.Series:
    """`exit_scale` of each run's test count (1 where the count is unknown)."""
    if not suite_tests:
        return pd.Series(1.0, index=n_tests.index)
    share = (n_tests.clip(lower=0.0) / suite_tests).clip(upper=1.0).fillna(1.0)
    return EXIT_FIXED_SHARE + (1.0 - EXIT_FIXED_SHARE) * share


def exit_tail_s(runs: pd.DataFrame, whole_suite_exits: pd.Series | None = None) -> float:
    """The seconds the whole suite's process takes to exit after its session: the runs'
    median tail (brought to the whole suite's, `whole_suite_exits`) when measured, else
    EXIT_TAIL_DEFAULT_S for a plugin history (its job wall is taken at session end, before the
    exit), else 0 (a job wall taken by a later step includes it)."""
    if whole_suite_exits is None:
        whole_suite_exits = numeric_column(runs, "exit_s")
    measured = whole_suite_exits.dropna()
    measured = measured[measured >= 0]
    if len(measured):
        return float(measured.median())
    if numeric_column(runs, "collect_s").notna().any():  # recorded by the plugin
        return EXIT_TAIL_DEFAULT_S
    return 0.0


def missing_inputs_note(inputs_missing: Sequence[str]) -> str:
    """What the model lacks and how to get it, for `laptime plan`'s text ("" when nothing)."""
    plugin_history = "seq" not in inputs_missing
    rest = [name for name in inputs_missing if name != "exit_s" or not plugin_history]
    notes = [_inputs_note(rest)] if rest else []
    if len(rest) < len(inputs_missing):
        notes.append(
            "model: no history run measured its exit tail (session end to process exit), so "
            f"{EXIT_TAIL_DEFAULT_S:g} s for the whole suite is charged for it (a job pays its "
            "share); run the tests as "
            "`laptime-ci run -- pytest ...` to measure it (docs/planner.md)"
        )
    return "\n".join(notes)


def _inputs_note(inputs_missing: Sequence[str]) -> str:
    if "job_wall_s" in inputs_missing and set(inputs_missing) <= {"job_wall_s", "malloc"}:
        # The plugin recorded the run (it has the run order): only the CI job's start stamp
        # was absent; a missing allocator state is told apart by the caller.
        return (
            "model: the history has no CI job start stamp, so the job's wall before pytest "
            "is unknown and the setup overhead stands in for it (export "
            "LAPTIME_JOB_STARTED_AT=$(date +%s) in the job's first step; GitLab's "
            "CI_JOB_STARTED_AT is read by itself; docs/planner.md)"
        )
    return (
        "model: the history lacks " + ", ".join(inputs_missing) + "; the setup overhead "
        "stands in for them (record with the laptime plugin, docs/planner.md)"
    )


# ----------------------------------------------------------------------------- parallelism


@dataclass(frozen=True)
class ParallelProfile:
    """A job's tests as Amdahl parts: serial seconds S and parallel seconds P over C cores."""

    serial_s: float
    parallel_s: float
    history_cores: float
    max_cores_used: float  # the largest per-test cpu/wall (1 = serial)

    @property
    def parallel_fraction(self) -> float:
        """Share of the serial test time that runs in parallel (0 for serial tests)."""
        total = self.serial_s + self.parallel_s
        return self.parallel_s / total if total > 0 else 0.0

    @property
    def parallel(self) -> bool:
        """True when the data shows tests using more than one core."""
        return self.parallel_s > 0.0

    def scale(self, cores: float) -> float:
        """Test time on `cores` per process relative to the history machine's."""
        at_history = self.serial_s + self.parallel_s / self.history_cores
        if at_history <= 0:
            return 1.0
        c = min(max(cores, 1.0), self.history_cores)
        return (self.serial_s + self.parallel_s / c) / at_history


# CPU time is accounted in scheduler ticks (4 ms at HZ=250): a 0.3 ms test that a tick lands
# in reads 13x its wall. Only tests this long show their cores; at this length one tick is
# up to 8% of the reading (CPU_TICK_ERROR), which a ratio above the core count can only be.
MEASURABLE_CORES_S = 0.05
CPU_TICK_ERROR = 0.1


def parallel_profile(
    quiet_s: pd.Series,
    cpu_s: pd.Series,
    history_cores: float | None,
    wall_s: pd.Series | None = None,
) -> ParallelProfile:
    """Amdahl parts of tests (quiet wall and CPU seconds per test) fitted on `history_cores`
    (unknown: the fewest cores the measurable tests' CPU / wall fits, within tick error).
    Cores used are CPU / `wall_s` (the history's wall, default the quiet one)."""
    # Against the history's own wall: a test whose threads fill every core keeps its main
    # thread waiting for one, and quiet = wall - wait would count those cores twice.
    wall = quiet_s if wall_s is None else wall_s
    measurable = wall >= MEASURABLE_CORES_S
    used = (cpu_s / wall).where(measurable).fillna(1.0).clip(lower=1.0)
    top = float(used.max()) if len(used) else 1.0
    if history_cores and history_cores >= 1:
        cores = float(history_cores)
    else:
        cores = float(math.ceil(top / (1.0 + CPU_TICK_ERROR)))
    cores = max(cores, 1.0)
    used = used.clip(upper=cores)
    if cores <= 1.0:
        return ParallelProfile(float(quiet_s.sum()), 0.0, 1.0, 1.0)
    p = ((1.0 - 1.0 / used) / (1.0 - 1.0 / cores)).clip(lower=0.0, upper=1.0)
    serial_total = quiet_s * used
    return ParallelProfile(
        serial_s=float((serial_total * (1.0 - p)).sum()),
        parallel_s=float((serial_total * p).sum()),
        history_cores=cores,
        max_cores_used=float(used.max()) if len(used) else 1.0,
    )
