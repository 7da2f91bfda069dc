"""Change detection beside ingest: a stored run's points pushed into the series it touched.

Only runs of the project's default branch count (docs/changes.md). The ingest's transaction
only marks the run (`mark_run`: a `change_backlog` row, durable with the run itself), so
detection never delays the ingest's commit. Right after that commit the worker detects it in
a short transaction of its own (`detect_marked`): each series of the run's cell keeps its
detector state (ingest/change_states.py); the cell's states are loaded, one point pushed into
each touched series in one vectorised pass (analysis.changes.table.SeriesTable), the push
logged, the changes confirmed stored, the run's pipeline watched and every pipeline final now
pushed into the project's pipeline series (ingest/pipeline_changes.py), and the mark deleted,
all in that transaction. A worker
that dies between the two commits leaves the mark: the next pass (`retry_backlog`, after each
drain of the queue, or the cell's next upload) detects the run from its stored results. A
cell's marked runs are always taken oldest first, so a series never takes its runs out of
order; a failure never fails the upload, and a cell whose oldest mark failed waits for the
retries.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

import numpy as np
import pandas as pd
import psycopg

from analysis.changes import DEFAULT_SETTINGS, Change, DetectionSettings
from analysis.changes.attribution import commits_between, pick_default_branch
from analysis.changes.run_points import run_points
from ingest.change_states import forget, load_cell, save_push
from ingest.pipeline_changes import watch_pipeline

log = logging.getLogger("laptime.changes")

# Advisory lock class of a cell's series: one worker at a time pushes into a cell's states.
_LOCK_CLASS = 727029
# A run whose detection failed this often in retries is left out of its series (logged), so
# one bad run cannot hold its cell's backlog for ever.
MAX_BACKLOG_ATTEMPTS = 5
_RESULT_COLUMNS = ("test_id", "file", "outcome", "duration_s")


@dataclass(frozen=True)
class RunToDetect:
    """A stored run as detection needs it."""

    project_id: int
    cell_id: int
    run_id: int
    branch: str | None


@dataclass(frozen=True)
class MarkedRun:
    """A run marked at ingest, with what its points are made of once the ingest committed:
    its stored results (None: it stored none) and its measures (`run_points`'s `run`)."""

    run: RunToDetect
    results: pd.DataFrame | None
    measures: Mapping[str, float | None] = field(default_factory=dict)


def mark_run(conn: psycopg.Connection[Any], run: RunToDetect) -> bool:
    """Inside the ingest's transaction: mark a default-branch run for detection (True), so
    that it is detected even if the worker dies right after the commit."""
    if not is_default_branch(conn, run.project_id, run.branch):
        return False
    conn.execute(
        "INSERT INTO change_backlog (run_id, project_id, cell_id) VALUES (%s, %s, %s) "
        "ON CONFLICT (run_id) DO NOTHING",
        (run.run_id, run.project_id, run.cell_id),
    )
    return True


def detect_marked(
    conn: psycopg.Connection[Any],
    marked: Sequence[MarkedRun],
    settings: DetectionSettings = DEFAULT_SETTINGS,
) -> int:
    """After the ingest's commit: detect these marked runs, each cell's older marks first, each
    run in a transaction of its own; returns the changes found. A detection fault never
    raises (it is written on the mark); a cell whose oldest mark failed before waits for
    `retry_backlog`. Call it outside any transaction."""
    by_cell: dict[int, dict[int, MarkedRun]] = {}
    for one in marked:
        by_cell.setdefault(one.run.cell_id, {})[one.run.run_id] = one
    found = 0
    for cell_id, runs in by_cell.items():
        found += _detect_cell(conn, cell_id, max(runs), runs, settings, retry=False)[1]
    return found


def retry_backlog(
    conn: psycopg.Connection[Any], settings: DetectionSettings = DEFAULT_SETTINGS
) -> int:
    """Detect every marked run (left by a failure, or by a worker that died after its ingest),
    oldest first per cell, each in its own transaction, from the stored results; returns how
    many were done. A cell whose oldest run fails again waits for the next call."""
    pending = conn.execute(
        "SELECT cell_id, max(run_id) FROM change_backlog GROUP BY cell_id ORDER BY cell_id"
    ).fetchall()
    conn.commit()
    done = 0
    for cell_id, last in pending:
        done += _detect_cell(conn, int(cell_id), int(last), {}, settings, retry=True)[0]
    return done


# The cell's oldest mark, with what reading its stored results back needs.
_OLDEST_MARK = """
SELECT b.run_id, b.project_id, b.error, r.id IS NOT NULL, r.branch, r.day, r.pipeline, r.wall_s,
    r.job_wall_s, r.cpu_s, r.xdist_workers
FROM change_backlog b LEFT JOIN run r ON r.id = b.run_id
WHERE b.cell_id = %s ORDER BY b.run_id LIMIT 1
"""


def _detect_cell(
    conn: psycopg.Connection[Any],
    cell_id: int,
    last: int,
    given: Mapping[int, MarkedRun],
    settings: DetectionSettings,
    *,
    retry: bool,
) -> tuple[int, int]:
    """Detect the cell's marked runs up to run `last`, oldest first, each in its own
    transaction (points from `given` where it has the run, else from its stored results).
    Stops at the first failure (recorded on its mark; an attempt spent when `retry`), and
    when not `retry` at a mark that failed before. Returns (runs done, changes found)."""
    done = found = 0
    while True:
        run_id = None
        try:
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(%s, hashint8(%s))", (_LOCK_CLASS, cell_id)
                )
                row = conn.execute(_OLDEST_MARK, (cell_id,)).fetchone()
                if row is None or int(row[0]) > last or (row[2] is not None and not retry):
                    return done, found
                run_id, project_id, _error, exists, branch, day, pipeline, *measures = row
                if not exists:  # the run was deleted since: nothing to detect
                    conn.execute("DELETE FROM change_backlog WHERE run_id = %s", (run_id,))
                    continue
                run = RunToDetect(int(project_id), cell_id, int(run_id), branch)
                marked = given.get(run.run_id)
                if marked is not None:
                    results = marked.results if marked.results is not None else _NO_RESULTS
                    points = run_points(results, run=marked.measures)
                else:
                    points = run_points(stored_results(conn, run, day), run=_measures(measures))
                found += push_run(conn, run, points, settings)
                if pipeline and branch:  # a marked run is of the default branch
                    found += push_pipelines(conn, run, str(branch), str(pipeline), settings)
                conn.execute("DELETE FROM change_backlog WHERE run_id = %s", (run.run_id,))
            done += 1
        except Exception as exc:
            if isinstance(exc, psycopg.OperationalError) or run_id is None:
                raise
            _record_failure(conn, int(run_id), exc, spend=retry)
            return done, found


_NO_RESULTS = pd.DataFrame({c: pd.Series(dtype=object) for c in _RESULT_COLUMNS})


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
    """Push one run's points into its cell's series and store the changes they confirm.
    The caller holds the cell's lock (`_detect_cell`)."""
    if points.empty:
        return 0
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
            _store_changes(conn, run, named, cell_id=run.cell_id)
    except BaseException:
        forget(run.cell_id)  # half-pushed, or pushed in a transaction that rolls back
        raise
    return len(found)


def push_pipelines(
    conn: psycopg.Connection[Any],
    run: RunToDetect,
    branch: str,
    pipeline: str,
    settings: DetectionSettings = DEFAULT_SETTINGS,
) -> int:
    """Watch the run's pipeline; push the project's pipelines of `branch` that are final now
    into its pipeline series (ingest/pipeline_changes.py) and store the changes they confirm.
    The caller holds the run's cell lock, inside the run's detection transaction."""
    found = watch_pipeline(
        conn, project_id=run.project_id, branch=branch, pipeline=pipeline, settings=settings
    )
    if found:
        _store_changes(conn, run, found, cell_id=None)
    return len(found)


def _store_changes(
    conn: psycopg.Connection[Any],
    run: RunToDetect,
    found: list[tuple[tuple[str, str], Change]],
    *,
    cell_id: int | None,
) -> None:
    """Insert the changes (of the cell's series, or with None the project's pipeline series)
    with their runs' commits, times and the commits between; `run` confirmed them."""
    run_ids = sorted({c.run_id_before for _, c in found} | {c.run_id_after for _, c in found})
    known = {
        int(r[0]): r[1:]
        for r in conn.execute(
            "SELECT id, commit_sha, started_at, first_parents FROM run WHERE id = ANY(%s)",
            (run_ids,),
        ).fetchall()
    }
    rows = []
    for (kind, key), change in found:
        before = known.get(change.run_id_before, (None, None, None))
        after = known.get(change.run_id_after, (None, None, None))
        between = commits_between(after[2], before[0], after[0])
        rows.append(
            (
                run.project_id, cell_id, kind, key, change.index,
                change.run_id_before, change.run_id_after, run.run_id,
                before[0], after[0], before[1], after[1],
                change.runs_before, change.runs_after,
                change.median_before_s, change.median_after_s,
                change.spread_before_s, change.spread_after_s, change.noise, change.z,
                None if between is None else list(between.commits),
                False if between is None else between.complete,
            )
        )  # fmt: skip
    # One pipelined batch: a step that every test of a cell shares (a new runner image) is
    # thousands of changes in one upload, not thousands of round trips.
    conn.cursor().executemany(
        """
        INSERT INTO duration_change (project_id, cell_id, kind, key, position,
            run_id_before, run_id_after, confirmed_run_id, commit_before, commit_after,
            at_before, at_after, runs_before, runs_after, median_before_s, median_after_s,
            spread_before_s, spread_after_s, noise, z, between_commits, between_complete)
        VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,
            %s, %s, %s, %s)
        ON CONFLICT DO NOTHING
        """,
        rows,
    )


def _record_failure(
    conn: psycopg.Connection[Any], run_id: int, exc: Exception, *, spend: bool
) -> None:
    """Write the failure on the run's mark; a retry spends an attempt, and the last one drops
    the run from its series (logged)."""
    if not spend:
        log.exception("change detection of run %s failed; left for a retry", run_id)
    with conn.transaction():
        row = conn.execute(
            "UPDATE change_backlog SET attempts = attempts + %s, error = %s WHERE run_id = %s "
            "RETURNING attempts",
            (int(spend), f"{type(exc).__name__}: {exc}"[:2000], run_id),
        ).fetchone()
        if row is not None and int(row[0]) >= MAX_BACKLOG_ATTEMPTS:
            log.error("change detection of run %s gave up; its points are left out", run_id)
            conn.execute("DELETE FROM change_backlog WHERE run_id = %s", (run_id,))
        elif spend:
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
