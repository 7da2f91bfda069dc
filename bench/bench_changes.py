"""Detection quality: lasting steps of known size and place in series shaped like real durations.

    .venv/bin/python -m bench.bench_changes                # 100 series per family and size
    .venv/bin/python -m bench.bench_changes --series 20    # quicker
    .venv/bin/python -m bench.bench_changes --no-otava     # without Apache Otava
    .venv/bin/python -m bench.bench_changes --out /tmp/changes.md

Series. Each is 105 default-branch runs (5 weeks at 3 runs a day). Its level is a real test
duration from the vendored report corpus (tests/data/corpus, durations of 1 s and more; the
quantised family draws 0.05-1 s), its run-to-run noise one of nine shapes: steady (1-3%),
typical (5-20%), noisy (25-50%), outliers (3% of runs 2-10x slower), heavy-tailed (Student t,
3 degrees of freedom), bimodal (a second mode 1.5-3x slower taking 10-40% of runs), a machine
mix (each run on one of 2-3 machine types 1.0/1.25/1.5x as fast, the type recorded), quantised
to the 10 ms that pytest --durations prints, and series of demo/synthetic.py's generated
history (its lognormal noise and machine speeds). A series' noise is the interquartile range /
1.349 of its log durations without a step, within one machine type. Steps of 0 (none), 1, 2,
3 and 5 times that noise, up or down, are injected at a run drawn from 20..85.

Scoring. A detection within 5 runs of the injected step finds it (the nearest counts); every
other detection is a false alarm, counted per 1,000 series-weeks over all series. The
localisation error is |detected - true| first run after the step.

Methods, on the same series in the same run: laptime's windowed rank scan (analysis/changes)
with its defaults and at other rank thresholds; Apache Otava 0.8.0 (E-divisive means with a
t-test merge, window 50, as `otava analyze` runs it) at several max p-values, installed from
PyPI into its own venv (default /tmp/laptime-otava: Otava pins numpy 2.2, laptime 2.4); and
Datadog's published rule (a run over 5x the mean of the week before and over that week's max).
Then the speed of a vectorised update: 10,000 series, one new run each.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from analysis.changes import DEFAULT_SETTINGS, DetectionSettings, SeriesPoints, detect_changes
from analysis.changes.table import SeriesTable

REPO = Path(__file__).resolve().parents[1]
RUNS = 105
RUNS_PER_WEEK = 21
SIZES = (0.0, 1.0, 2.0, 3.0, 5.0)
MATCH_RUNS = 5
OTAVA_VERSION = "0.8.0"
OTAVA_PVALUES = ("0.001", "0.0001", "1e-05", "1e-06", "1e-08")
FAMILIES = (
    "steady",
    "typical",
    "noisy",
    "outliers",
    "heavy-tailed",
    "bimodal",
    "machine-mix",
    "quantised",
    "synthetic-history",
)
MACHINE_SPEEDS = {"linux": 1.0, "macos": 1.25, "windows": 1.5}  # demo/synthetic.py's


@dataclass(frozen=True)
class Case:
    """One benchmark series: durations, machine types, the injected step and the noise."""

    family: str
    size: float  # step in noise units (0: none)
    position: int  # first run after the step (-1: none)
    noise: float
    duration_s: np.ndarray
    machine: np.ndarray


def corpus_levels() -> np.ndarray:
    """Every test duration in the vendored corpus (seconds, > 0)."""
    from ingest.parsers import parse_report
    from tests.corpus import corpus_files, read_corpus

    found: list[float] = []
    for rel in corpus_files():
        if rel.endswith((".md", ".tsv")) or rel.endswith("SHA256SUMS"):
            continue
        try:
            report = parse_report(read_corpus(rel), filename=rel)
        except Exception:  # negative samples in the corpus are meant to fail
            continue
        d = report.results["duration_s"].to_numpy(dtype=float)
        found.extend(d[np.isfinite(d) & (d > 0)])
    return np.array(found)


def synthetic_series(rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """Per (test, job) series of the demo history's default branch, tests of 0.2 s and more."""
    from demo.synthetic import generate_history

    history = generate_history(days=RUNS, tests=200, jobs=4, pipelines_per_day=1, seed=7)
    runs = history.runs[history.runs["branch"] == "main"][["run_id", "job", "started_at"]]
    frame = history.results[["nodeid", "run_id", "duration_s", "outcome"]].merge(runs, on="run_id")
    frame = frame[frame["outcome"] == "passed"].sort_values("started_at", kind="stable")
    series = [
        g["duration_s"].to_numpy()
        for _, g in frame.groupby(["nodeid", "job"], observed=True)
        if len(g) == RUNS and g["duration_s"].median() >= 0.2
    ]
    picks = rng.choice(len(series), size=count, replace=len(series) < count)
    return [series[i] for i in picks]


def noise_of(family: str, rng: np.random.Generator, level: float) -> Callable[[int], np.ndarray]:
    """A draw of `n` durations (no step) of this family around `level` seconds."""
    if family == "steady":
        sigma = rng.uniform(0.01, 0.03)
        return lambda n: level * np.exp(rng.normal(0, sigma, n))
    if family == "typical":
        sigma = rng.uniform(0.05, 0.2)
        return lambda n: level * np.exp(rng.normal(0, sigma, n))
    if family == "noisy":
        sigma = rng.uniform(0.25, 0.5)
        return lambda n: level * np.exp(rng.normal(0, sigma, n))
    if family == "outliers":
        sigma = rng.uniform(0.03, 0.15)

        def outliers(n: int) -> np.ndarray:
            spike = np.where(rng.random(n) < 0.03, rng.uniform(2, 10, n), 1.0)
            return level * np.exp(rng.normal(0, sigma, n)) * spike

        return outliers
    if family == "heavy-tailed":
        sigma = rng.uniform(0.03, 0.15)
        return lambda n: level * np.exp(sigma * rng.standard_t(3, n))
    if family == "bimodal":
        sigma, ratio, share = rng.uniform(0.03, 0.1), rng.uniform(1.5, 3), rng.uniform(0.1, 0.4)

        def bimodal(n: int) -> np.ndarray:
            slow = rng.random(n) < share
            return level * np.exp(rng.normal(0, sigma, n)) * np.where(slow, ratio, 1.0)

        return bimodal
    if family == "quantised":
        sigma = rng.uniform(0.05, 0.15)
        return lambda n: np.maximum(np.round(level * np.exp(rng.normal(0, sigma, n)), 2), 0.0)
    raise ValueError(family)


def make_cases(per: int, seed: int) -> list[Case]:
    """`per` series for every family and step size."""
    rng = np.random.default_rng(seed)
    levels = corpus_levels()
    big = levels[levels >= 1.0]
    small = levels[(levels >= 0.05) & (levels < 1.0)]
    synthetic = synthetic_series(rng, per * len(SIZES))
    cases = []
    for family in FAMILIES:
        for k, size in enumerate(SIZES):
            for i in range(per):
                position = int(rng.integers(20, RUNS - 19)) if size else -1
                sign = rng.choice([-1.0, 1.0])
                machine = np.full(RUNS, None, dtype=object)
                if family == "synthetic-history":
                    base = synthetic[k * per + i]
                    logs = np.log(base)
                    noise = _iqr_sigma(logs - np.median(logs))
                    values = base.copy()
                elif family == "machine-mix":
                    kinds = list(MACHINE_SPEEDS)[: int(rng.integers(2, 4))]
                    machine = rng.choice(np.array(kinds, dtype=object), RUNS)
                    speed = np.array([MACHINE_SPEEDS[m] for m in machine])
                    sigma = rng.uniform(0.03, 0.15)
                    level = float(rng.choice(big))
                    values = level * speed * np.exp(rng.normal(0, sigma, RUNS))
                    noise = _iqr_sigma(rng.normal(0, sigma, 20000))
                else:
                    level = float(rng.choice(small if family == "quantised" else big))
                    draw = noise_of(family, rng, level)
                    noise = _iqr_sigma(np.log(np.maximum(draw(20000), 1e-4)))
                    values = draw(RUNS)
                if size:
                    factor = float(np.exp(sign * size * noise))
                    values = values.copy()
                    values[position:] *= factor
                    if family == "quantised":
                        values = np.round(values, 2)
                cases.append(Case(family, size, position, noise, values, machine))
    return cases


def _iqr_sigma(logs: np.ndarray) -> float:
    q75, q25 = np.percentile(logs, [75, 25])
    return float((q75 - q25) / 1.349)


def points_of(case: Case) -> SeriesPoints:
    """The case as the detector's input (run ids and times are only carried along)."""
    n = len(case.duration_s)
    return SeriesPoints(
        duration_s=case.duration_s,
        run_id=np.arange(n, dtype=np.int64),
        commit=np.array([f"c{i}" for i in range(n)], dtype=object),
        started_at=np.datetime64("2024-01-01T08:00", "ns") + np.arange(n) * np.timedelta64(8, "h"),
        machine=case.machine,
    )


def run_laptime(cases: list[Case], settings: DetectionSettings) -> tuple[list[list[int]], float]:
    """Detected first-runs-after per case, and seconds taken."""
    started = time.perf_counter()
    found = [[c.index for c in detect_changes(points_of(case), settings)] for case in cases]
    return found, time.perf_counter() - started


def run_datadog(cases: list[Case]) -> list[list[int]]:
    """Datadog's rule: a run over 5x the mean of the week before and over that week's max."""
    found = []
    for case in cases:
        x = case.duration_s
        hits = []
        for i in range(5, len(x)):
            week = x[max(0, i - RUNS_PER_WEEK) : i]
            if x[i] > 5 * week.mean() and x[i] > week.max():
                hits.append(i)
        found.append(hits)
    return found


def otava_python(venv: Path) -> Path:
    """Otava's own venv (created once, reused): it pins a numpy laptime cannot share."""
    python = venv / "bin" / "python"
    marker = venv / f".otava-{OTAVA_VERSION}-ready"
    if not marker.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
        subprocess.run([*pip, f"apache-otava=={OTAVA_VERSION}"], check=True)
        marker.touch()
    return python


def run_otava(cases: list[Case], python: Path) -> dict[str, tuple[list[list[int]], float]]:
    """Otava's change points per max p-value: (first-runs-after per case, seconds)."""
    with tempfile.TemporaryDirectory(prefix="laptime-otava-") as tmp:
        src, out = Path(tmp) / "in.npz", Path(tmp) / "out.json"
        lengths = [len(c.duration_s) for c in cases]
        offsets = np.concatenate([[0], np.cumsum(lengths)])
        np.savez(src, values=np.concatenate([c.duration_s for c in cases]), offsets=offsets)
        script = REPO / "bench" / "otava_changes.py"
        subprocess.run([str(python), str(script), str(src), str(out), *OTAVA_PVALUES], check=True)
        answer = json.loads(out.read_text(encoding="utf-8"))
    return {p: (v["changes"], v["seconds"]) for p, v in answer.items()}


@dataclass(frozen=True)
class Score:
    """One method's quality over a set of cases."""

    found: int
    steps: int
    false_alarms: int
    series_weeks: float
    errors: list[int]

    @property
    def recall(self) -> float:
        return self.found / self.steps if self.steps else float("nan")

    @property
    def false_per_kweek(self) -> float:
        return 1000.0 * self.false_alarms / self.series_weeks

    @property
    def within2(self) -> float:
        """Share of the injected steps found and placed within 2 runs."""
        return sum(e <= 2 for e in self.errors) / self.steps if self.steps else float("nan")

    @property
    def median_error(self) -> float:
        return float(np.median(self.errors)) if self.errors else float("nan")


def score(cases: list[Case], found: list[list[int]]) -> Score:
    """Recall, false alarms and localisation of detections against the injected steps."""
    hits = false = steps = 0
    errors: list[int] = []
    for case, detected in zip(cases, found, strict=True):
        unmatched = list(detected)
        if case.position >= 0:
            steps += 1
            near = [d for d in detected if abs(d - case.position) <= MATCH_RUNS]
            if near:
                best = min(near, key=lambda d: abs(d - case.position))
                hits += 1
                errors.append(abs(best - case.position))
                unmatched.remove(best)
        false += len(unmatched)
    weeks = sum(len(c.duration_s) for c in cases) / RUNS_PER_WEEK
    return Score(hits, steps, false, weeks, errors)


def update_speed(series: int, settings: DetectionSettings, rounds: int = 7) -> float:
    """Median seconds to push one new run into each of `series` full windows."""
    rng = np.random.default_rng(1)
    table = SeriesTable(series, settings)
    rows = np.arange(series)
    commits = np.full(series, "c", dtype=object)
    when = np.full(series, np.datetime64("2024-01-01", "ns"))
    levels = np.exp(rng.normal(0, 1, series))
    for i in range(settings.window):
        table.push(
            rows, levels * np.exp(rng.normal(0, 0.1, series)), np.full(series, i), commits, when
        )
    times = []
    for i in range(rounds):
        values = levels * np.exp(rng.normal(0, 0.1, series))
        started = time.perf_counter()
        table.push(rows, values, np.full(series, settings.window + i), commits, when)
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def table_rows(name: str, cases: list[Case], found: list[list[int]]) -> list[str]:
    """Markdown rows: per step size, recall, within-2 share and median error; then FA."""
    cells = []
    for size in SIZES[1:]:
        s = score(
            [c for c in cases if c.size == size],
            [f for c, f in zip(cases, found, strict=True) if c.size == size],
        )
        cells.append(f"{s.recall:.1%} / {s.within2:.1%} / {s.median_error:.0f}")
    total = score(cases, found)
    return [f"| {name} | {total.false_per_kweek:.1f} | " + " | ".join(cells) + " |"]


def family_rows(name: str, cases: list[Case], found: list[list[int]], size: float) -> str:
    """Markdown row: per family, recall / within 2 at `size`, and false alarms per 1,000."""
    cells = []
    for family in FAMILIES:
        picked = [(c, f) for c, f in zip(cases, found, strict=True) if c.family == family]
        at = [(c, f) for c, f in picked if c.size == size]
        s = score([c for c, _ in at], [f for _, f in at])
        fa = score([c for c, _ in picked], [f for _, f in picked]).false_per_kweek
        cells.append(f"{s.recall:.0%} / {s.within2:.0%} / {fa:.0f}")
    return f"| {name} | " + " | ".join(cells) + " |"


def main() -> None:
    """Run every method on the same cases and print the markdown tables."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", type=int, default=100, help="series per family and size")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-otava", action="store_true")
    parser.add_argument("--otava-venv", type=Path, default=Path("/tmp/laptime-otava"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()

    cases = make_cases(args.series, args.seed)
    weeks = sum(len(c.duration_s) for c in cases) / RUNS_PER_WEEK
    print(f"{len(cases)} series, {weeks:,.0f} series-weeks", flush=True)
    results: list[tuple[str, list[list[int]]]] = []
    timings: list[str] = []
    for z in (DEFAULT_SETTINGS.min_z, 3.5, 5.0):
        settings = dataclasses.replace(DEFAULT_SETTINGS, min_z=z)
        found, took = run_laptime(cases, settings)
        default = " (default)" if z == DEFAULT_SETTINGS.min_z else ""
        name = f"laptime rank scan, z >= {z:g}{default}"
        results.append((name, found))
        timings.append(f"{name}: {1000 * took / len(cases):.2f} ms per series")
        print(timings[-1], flush=True)
    if not args.no_otava:
        python = otava_python(args.otava_venv)
        for p, (found, took) in run_otava(cases, python).items():
            name = f"Otava {OTAVA_VERSION}, max p {p}" + (" (default)" if p == "0.001" else "")
            results.append((name, found))
            timings.append(f"{name}: {1000 * took / len(cases):.2f} ms per series")
            print(timings[-1], flush=True)
    results.append(("Datadog rule (5x mean, > week max)", run_datadog(cases)))

    lines = [
        f"{len(cases):,} series of {RUNS} runs ({weeks:,.0f} series-weeks), seed {args.seed}.",
        "Cells: found / found within 2 runs / median error (runs), by step size in noise units.",
        "",
        "| method | false alarms per 1,000 series-weeks | 1x | 2x | 3x | 5x |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for name, found in results:
        lines += table_rows(name, cases, found)
    lines += [
        "",
        "Per family at 3x: found / within 2 runs / false alarms per 1,000 series-weeks.",
        "",
        "| method | " + " | ".join(FAMILIES) + " |",
        "| --- |" + " --- |" * len(FAMILIES),
    ]
    lines += [family_rows(name, cases, found, 3.0) for name, found in results]
    speed = update_speed(10_000, DEFAULT_SETTINGS)
    lines += [
        "",
        *[f"- {t}" for t in timings],
        f"- one new run in each of 10,000 series (full {DEFAULT_SETTINGS.window}-run windows), "
        f"vectorised: {1000 * speed:.0f} ms (median of 7)",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
