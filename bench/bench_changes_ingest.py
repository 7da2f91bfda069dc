"""What change detection adds to one upload's ingest, and what it costs the worker after.

    .venv/bin/python -m bench.bench_changes_ingest [--tests 10000] [--history 125] [--rounds 15]
        [--step-all N] [--profile]

A history of `history` default-branch runs of one cell (`tests` tests over tests/50 files, so
every series holds a full 120-run window) is stored through the real `store_run` and detected
as the worker does; then `rounds` more runs are timed, each in three parts: the store alone
(the baseline, in the same transaction), the worker's `mark_changes` in the ingest's
transaction (what detection adds before the commit), and, after the commit, the worker's
`detect_after_commit` (points, the cell's states, one vectorised push, the log row, the
snapshot every 32 uploads, the changes stored, the mark deleted: its own transaction). In the
same run, the judging alone (`SeriesTable.push` of one run into as many full windows).

`--step-all N`: every test takes 1.5x as long from the Nth timed run on, so the run that
confirms it names a change in each of the cell's series at once (a new runner image).
`--profile`: where detection's milliseconds go, per upload (cProfile, cumulative per phase).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import psycopg

from analysis.changes import DEFAULT_SETTINGS
from bench.bench_changes import update_speed
from bench.bench_store import synthetic_results
from bench.common import scratch_database
from ingest.merge import MergedRun
from ingest.model import SessionInfo
from ingest.store import KnownTests, RunMetadata, store_run
from ingest.upload_ingest import Outcome, detect_after_commit, mark_changes

# Phases of detection after the commit, by the function that does them (file, name): each
# row is that function's cumulative time, so nested rows are parts of the row above.
PHASES = (
    ("detection after the commit, whole", "ingest/upload_ingest.py", "detect_after_commit"),
    ("  the run's points (run_points)", "analysis/changes/run_points.py", "run_points"),
    ("  the cell's states (load_cell)", "ingest/change_states.py", "load_cell"),
    ("  rows of the touched series (rows_of)", "ingest/change_states.py", "rows_of"),
    ("  push: windows shifted and judged", "analysis/changes/table.py", "push"),
    ("    shift + kept ranks moved (_append)", "analysis/changes/table.py", "_append"),
    ("      ranks moved (_rerank)", "analysis/changes/table.py", "_rerank"),
    ("    judge (SeriesTable._judge)", "analysis/changes/table.py", "_judge"),
    ("      windows judged (judge_windows)", "analysis/changes/windows.py", "judge_windows"),
    ("        rank statistic (_ranked_scores)", "analysis/changes/windows.py", "_ranked_scores"),
    ("        ranks sorted afresh (midranks)", "analysis/changes/windows.py", "midranks"),
    ("        sizes of candidates (_large_enough)", "analysis/changes/windows.py", "_large_enough"),
    ("        placing a step (_refine)", "analysis/changes/windows.py", "_refine"),
    ("      the changes' numbers (make_changes)", "analysis/changes/change.py", "make_changes"),
    ("  log row + snapshot (save_push)", "ingest/change_states.py", "save_push"),
    ("    snapshot rewrite", "ingest/change_states.py", "_write_snapshot"),
    ("  changes stored (_store_changes)", "ingest/change_detection.py", "_store_changes"),
    ("  pipeline series (push_pipelines)", "ingest/change_detection.py", "push_pipelines"),
    ("  database round trips (psycopg wait)", "psycopg/connection.py", "wait"),
)


def _merged(tests: int, seed: int, factor: float) -> MergedRun:
    results = synthetic_results(tests, seed=0)
    # The same tests every run, each with its own steady level and 3% noise.
    rng = np.random.default_rng(seed)
    results["duration_s"] = results["duration_s"] * rng.lognormal(0.0, 0.03, len(results))
    results["duration_s"] *= factor
    return MergedRun(results=results, session=SessionInfo(wall_s=600.0), partial=False)


def _ingest(
    conn: psycopg.Connection,
    project_id: int,
    i: int,
    tests: int,
    known: KnownTests,
    factor: float = 1.0,
    profile: cProfile.Profile | None = None,
) -> tuple[float, float, float]:
    """Store run i and mark it (one transaction), then detect it as the worker does:
    (store seconds, mark seconds, detection seconds)."""
    meta = RunMetadata(
        job="unit", branch="main", commit=f"{i:040x}", pipeline=f"p{i}",
        started_at=datetime(2026, 11, 1, tzinfo=UTC) + timedelta(hours=i),
    )  # fmt: skip
    with conn.transaction():
        start = time.perf_counter()
        stored = store_run(
            conn, project_id=project_id, upload_id=i, meta=meta,
            merged=_merged(tests, seed=i, factor=factor), known_tests=known,
        )  # fmt: skip
        stored_at = time.perf_counter()
        marked = mark_changes(conn, project_id, stored)
        marked_at = time.perf_counter()
    assert marked is not None
    if profile is not None:
        profile.enable()
    detect_start = time.perf_counter()
    detect_after_commit(conn, [Outcome("done", marked=marked)])
    detected = time.perf_counter() - detect_start
    if profile is not None:
        profile.disable()
    return stored_at - start, marked_at - stored_at, detected


def phase_table(profile: cProfile.Profile, uploads: int) -> list[tuple[str, float]]:
    """(phase, ms per upload) of PHASES from a profile of `uploads` detections."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    rows = []
    for label, path, name in PHASES:
        total = sum(
            cumulative
            for (file, _line, func), (_cc, _nc, _tt, cumulative, _callers) in stats.items()
            if func == name and file.replace(os.sep, "/").endswith(path)
        )
        rows.append((label, total * 1000 / uploads))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tests", type=int, default=10_000)
    parser.add_argument("--history", type=int, default=125)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--step-all", type=int, default=None)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    profile = cProfile.Profile() if args.profile else None
    with scratch_database() as (_url, dsn), psycopg.connect(dsn) as conn:
        project_id = conn.execute(
            "INSERT INTO project (slug, name) VALUES ('bench', 'bench') RETURNING id"
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
        known = KnownTests()
        for i in range(args.history):
            _ingest(conn, project_id, i, args.tests, known)
        store_s, mark_s, detect_s = [], [], []
        for n in range(args.rounds):
            factor = 1.5 if args.step_all is not None and n >= args.step_all else 1.0
            i = args.history + n
            s, m, d = _ingest(conn, project_id, i, args.tests, known, factor, profile)
            store_s.append(s)
            mark_s.append(m)
            detect_s.append(d)
        changes = conn.execute("SELECT count(*) FROM duration_change").fetchone()
        backlog = conn.execute("SELECT count(*) FROM change_backlog").fetchone()
        series = conn.execute(
            "SELECT length(rows) / 8 FROM change_log ORDER BY seq DESC LIMIT 1"
        ).fetchone()
    assert changes is not None
    assert backlog is not None
    assert series is not None
    push_s = update_speed(int(series[0]), DEFAULT_SETTINGS)
    ms = 1000.0
    print(
        f"change detection beside ingest: {series[0]} series touched per upload "
        f"({args.tests} tests + files + job wall), full windows after {args.history} runs, "
        f"{args.rounds} uploads timed; load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  ingest transaction: store alone median {statistics.median(store_s) * ms:.1f} ms; "
        f"the mark adds median {statistics.median(mark_s) * ms:.2f} ms, worst "
        f"{max(mark_s) * ms:.2f} ms (ratio to the store alone "
        f"{statistics.median([(s + m) / s for s, m in zip(store_s, mark_s, strict=True)]):.3f}x)"
    )
    print(
        f"  detection after the commit (the worker's own transaction): median "
        f"{statistics.median(detect_s) * ms:.1f} ms, worst {max(detect_s) * ms:.1f} ms; "
        f"changes stored {changes[0]}, marks left {backlog[0]}"
    )
    print(
        "  judging alone, same run (SeriesTable.push into as many full windows, median of 7): "
        f"{push_s * ms:.1f} ms"
    )
    if profile is not None:
        print(f"  where detection's time goes, ms per upload (cProfile, {args.rounds} uploads):")
        for label, per_upload in phase_table(profile, args.rounds):
            print(f"    {label:<44} {per_upload:8.1f}")


if __name__ == "__main__":
    main()
