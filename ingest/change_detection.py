"""Change detection at ingest: a stored run's points pushed into the series it touched.

Only runs of the project's default branch count (docs/changes.md). Each series of the run's
cell keeps its detector state (ingest/change_states.py); an upload loads its cell's states,
pushes one point into each touched series in one vectorised pass
(analysis.changes.table.SeriesTable), logs the push and stores the changes confirmed. A
failure here never fails the upload: the ingest keeps its results, the run goes to
`change_backlog`, and the worker retries it later from the stored results (in run order per
cell, so a series never takes its runs out of order).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np
import pandas as pd
import psycopg

from analysis.changes import DEFAULT_SETTINGS, Change, DetectionSettings
from analysis.changes.attribution import commits_between, pick_default_branch
from analysis.changes.run_points import run_points
from ingest.change_states import forget, load_cell, save_push

log = logging.getLogger("laptime.changes")

# Advisory lock class of a cell's series: uploads of one cell update its states one at a time.
_LOCK_CLASS = 727029
# A run whose detection failed this often is left out of its series (logged), so one bad run
# cannot hold its cell's backlog for ever.
MAX_BACKLOG_ATTEMPTS = 5


@dataclass(frozen=True)
class RunToDetect:
    """A stored run as detection needs it."""

    project_id: int
    cell_id: int
    run_id: int
    branch: str | None


def detect_at_ingest(
    conn: psycopg.Connection[Any],
    run: RunToDetect,
    points: pd.DataFrame | None,
    settings: DetectionSettings = DEFAULT_SETTINGS,
) -> int:
    """Push the run's points inside the ingest's transaction; on any failure (or while its
    cell has a backlog, or without points) queue the run for a retry instead, which reads
    its stored results. Returns the changes found."""
    if not is_default_branch(conn, run.project_id, run.branch):
        return 0
    if points is None or _has_backlog(conn, run.cell_id):
        _queue(conn, run, None if points is not None else "no points at ingest")
        return 0
    try:
        with conn.transaction():  # a savepoint: a failure undoes only detection's writes
            return push_run(conn, run, points, settings)
    except Exception as exc:
        log.exception("change detection of run %s failed; queued for a retry", run.run_id)
        _queue(conn, run, f"{type(exc).__name__}: {exc}")
        return 0


def is_default_branch(conn: psycopg.Connection[Any], project_id: int, branch: str | None) -> bool:
    """True when `branch` is the project's default branch (set, or detected)."""
    if not branch:
        return False
    return default_branch(conn, project_id) == branch


def default_branch(conn: psycopg.Connection[Any], project_id: int) -> str | None:
    """The project's default branch: its override, else detected from its cells."""
    row = conn.execute("SELECT default_branch FROM project WHERE id = %s", (project_id,)).fetchone()
    override = row[0] if row else None
    cells = conn.execute(
        "SELECT branch, count(*) FROM cell WHERE project_id = %s GROUP BY branch", (project_id,)
    ).fetchall()
    return pick_default_branch(override, [(str(b), int(n)) for b, n in cells])


def push_run(
    conn: psycopg.Connection[Any],
    run: RunToDetect,
    points: pd.DataFrame,
    settings: DetectionSettings = DEFAULT_SETTINGS,
) -> int:
    """Push one run's points into its cell's series and store the changes they confirm."""
    if points.empty:
        return 0
    conn.execute("SELECT pg_advisory_xact_lock(%s, hashint8(%s))", (_LOCK_CLASS, run.cell_id))
    try:
        states = load_cell(conn, run.cell_id, settings)
        first_new = len(states.kinds)
        kinds = points["kind"].tolist()
        keys = points["key"].tolist()
        rows = states.rows_of(kinds, keys)
        table = states.table
        anchors = table.anchor[rows].copy()
        durations = points["duration_s"].to_numpy(dtype=float)
        found = table.push(
            rows,
            durations,
            np.full(len(rows), run.run_id, dtype=np.int64),
            np.full(len(rows), "", dtype=object),
            np.zeros(len(rows), dtype="datetime64[ns]"),
        )
        save_push(
            conn, project_id=run.project_id, cell_id=run.cell_id, states=states,
            first_new=first_new, run_id=run.run_id, rows=rows, durations=durations,
            moved=rows[table.anchor[rows] != anchors],
        )  # fmt: skip
        if found:
            named = [((states.kinds[row], states.keys[row]), change) for row, change in found]
            _store_changes(conn, run, named)
    except BaseException:
        forget(run.cell_id)  # half-pushed, or pushed in a transaction that rolls back
        raise
    return len(found)


def _store_changes(
    conn: psycopg.Connection[Any], run: RunToDetect, found: list[tuple[tuple[str, str], Change]]
) -> None:
    """Insert the changes with their runs' commits, times and the commits between."""
    run_ids = sorted({c.run_id_before for _, c in found} | {c.run_id_after for _, c in found})
    known = {
        int(r[0]): r[1:]
        for r in conn.execute(
            "SELECT id, commit_sha, started_at, first_parents FROM run WHERE id = ANY(%s)",
            (run_ids,),
        ).fetchall()
    }
    for (kind, key), change in found:
        before = known.get(change.run_id_before, (None, None, None))
        after = known.get(change.run_id_after, (None, None, None))
        between = commits_between(after[2], before[0], after[0])
        conn.execute(
            """
            INSERT INTO duration_change (project_id, cell_id, kind, key, position,
                run_id_before, run_id_after, confirmed_run_id, commit_before, commit_after,
                at_before, at_after, runs_before, runs_after, median_before_s, median_after_s,
                spread_before_s, spread_after_s, noise, z, between_commits, between_complete)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
                %s, %s, %s, %s)
            ON CONFLICT (cell_id, kind, key, position) DO NOTHING
            """,
            (
                run.project_id, run.cell_id, kind, key, change.index,
                change.run_id_before, change.run_id_after, run.run_id,
                before[0], after[0], before[1], after[1],
                change.runs_before, change.runs_after,
                change.median_before_s, change.median_after_s,
                change.spread_before_s, change.spread_after_s, change.noise, change.z,
                None if between is None else list(between.commits),
                False if between is None else between.complete,
            ),
        )  # fmt: skip


def _has_backlog(conn: psycopg.Connection[Any], cell_id: int) -> bool:
    row = conn.execute("SELECT 1 FROM change_backlog WHERE cell_id = %s LIMIT 1", (cell_id,))
    return row.fetchone() is not None


def _queue(conn: psycopg.Connection[Any], run: RunToDetect, error: str | None) -> None:
    conn.execute(
        "INSERT INTO change_backlog (run_id, project_id, cell_id, error) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (run_id) DO NOTHING",
        (run.run_id, run.project_id, run.cell_id, None if error is None else error[:2000]),
    )


def retry_backlog(
    conn: psycopg.Connection[Any], settings: DetectionSettings = DEFAULT_SETTINGS
) -> int:
    """Detect the backlog's runs again, oldest first per cell, each in its own transaction;
    returns how many were done. A cell whose oldest run fails again waits for the next call."""
    done = 0
    blocked: set[int] = set()
    pending = conn.execute(
        "SELECT run_id, cell_id FROM change_backlog ORDER BY cell_id, run_id"
    ).fetchall()
    conn.commit()
    for run_id, cell_id in pending:
        if cell_id in blocked:
            continue
        try:
            with conn.transaction():
                row = conn.execute(
                    "SELECT b.project_id, r.branch, r.day, r.wall_s, r.job_wall_s, r.cpu_s, "
                    "r.xdist_workers FROM change_backlog b JOIN run r ON r.id = b.run_id "
                    "WHERE b.run_id = %s FOR UPDATE OF b SKIP LOCKED",
                    (run_id,),
                ).fetchone()
                if row is None:
                    gone = conn.execute(
                        "DELETE FROM change_backlog WHERE run_id = %s AND NOT EXISTS "
                        "(SELECT 1 FROM run WHERE id = %s) RETURNING run_id",
                        (run_id, run_id),
                    ).fetchone()
                    if gone is None:
                        blocked.add(cell_id)  # another worker holds it
                    continue
                project_id, branch, day, *measures = row
                run = RunToDetect(int(project_id), int(cell_id), int(run_id), branch)
                results = stored_results(conn, run, day)
                points = run_points(results, run=_measures(measures))
                push_run(conn, run, points, settings)
                conn.execute("DELETE FROM change_backlog WHERE run_id = %s", (run_id,))
            done += 1
        except Exception as exc:
            if isinstance(exc, psycopg.OperationalError):
                raise
            blocked.add(cell_id)
            _record_retry_failure(conn, int(run_id), exc)
    return done


def _record_retry_failure(conn: psycopg.Connection[Any], run_id: int, exc: Exception) -> None:
    with conn.transaction():
        row = conn.execute(
            "UPDATE change_backlog SET attempts = attempts + 1, error = %s WHERE run_id = %s "
            "RETURNING attempts",
            (f"{type(exc).__name__}: {exc}"[:2000], run_id),
        ).fetchone()
        if row is not None and int(row[0]) >= MAX_BACKLOG_ATTEMPTS:
            log.error("change detection of run %s gave up; its points are left out", run_id)
            conn.execute("DELETE FROM change_backlog WHERE run_id = %s", (run_id,))
        else:
            log.warning("change detection of run %s failed again: %s", run_id, exc)


def _measures(values: list[Any]) -> Mapping[str, float | None]:
    wall, job_wall, cpu, workers = values
    return {
        "wall_s": None if wall is None else float(wall),
        "job_wall_s": None if job_wall is None else float(job_wall),
        "cpu_s": None if cpu is None else float(cpu),
        "xdist_workers": None if workers is None else float(workers),
    }


def stored_results(conn: psycopg.Connection[Any], run: RunToDetect, day: date) -> pd.DataFrame:
    """A stored run's results as run_points reads them (its day names the partition)."""
    rows = conn.execute(
        "SELECT tr.test_id, tc.nodeid, tc.params, tc.file, tr.outcome, tr.duration_s, "
        "tr.setup_s, tr.call_s, "
        "tr.teardown_s, tr.cpu_s, tr.cpu_wait_s FROM test_result tr "
        "JOIN test_case tc ON tc.id = tr.test_id "
        "WHERE tr.project_id = %s AND tr.day = %s AND tr.run_id = %s",
        (run.project_id, day, run.run_id),
    ).fetchall()
    columns = [
        "test_id", "nodeid", "params", "file", "outcome", "duration_s", "setup_s", "call_s",
        "teardown_s", "cpu_s", "cpu_wait_s",
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=columns)
    for name in columns[5:]:
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
    return frame
