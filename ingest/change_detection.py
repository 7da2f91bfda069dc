"""Change detection at ingest: a stored run's points pushed into the series it touched.

Only runs of the project's default branch count (docs/changes.md). Each series of the run's
cell keeps its detector state in `change_series`; an upload reads its cell's states, pushes one
point into each touched series in one vectorised pass (analysis.changes.table.SeriesTable),
writes back the touched states and stores the changes confirmed. A failure here never fails
the upload: the ingest keeps its results, the run goes to `change_backlog`, and the worker
retries it later from the stored results (in run order per cell, so a series never takes its
runs out of order).
"""

from __future__ import annotations

import logging
import struct
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
from analysis.changes.table import SeriesTable

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
    states = _read_states(conn, run.cell_id)
    keys = pd.MultiIndex.from_arrays([points["kind"], points["key"]])
    table, rows, names = _table(states, keys, settings)
    found = table.push(
        rows,
        points["duration_s"].to_numpy(dtype=float),
        np.full(len(rows), run.run_id, dtype=np.int64),
        np.full(len(rows), "", dtype=object),
        np.zeros(len(rows), dtype="datetime64[ns]"),
    )
    _write_states(conn, run, keys, table, rows, states)
    if found:
        _store_changes(conn, run, [(names[row], change) for row, change in found])
    return len(found)


@dataclass(frozen=True)
class _States:
    """A cell's stored series states, row i of every array for series index[i]."""

    index: pd.MultiIndex
    ids: np.ndarray
    count: np.ndarray
    anchor: np.ndarray
    run_base: np.ndarray
    durations: list[bytes]
    run_offsets: list[bytes]

    def __len__(self) -> int:
        return len(self.index)


def _read_states(conn: psycopg.Connection[Any], cell_id: int) -> _States:
    rows = (
        conn.cursor(binary=True)
        .execute(
            "SELECT kind, key, id, count, anchor, run_base, durations, run_offsets "
            "FROM change_series WHERE cell_id = %s",
            (cell_id,),
        )
        .fetchall()
    )
    if not rows:
        empty = np.array([], dtype=np.int64)
        return _States(_empty_index(), empty, empty, empty, empty, [], [])
    kinds, keys, ids, counts, anchors, bases, durations, offsets = zip(*rows, strict=True)
    return _States(
        index=pd.MultiIndex.from_arrays([list(kinds), list(keys)]),
        ids=np.array(ids, dtype=np.int64),
        count=np.array(counts, dtype=np.int64),
        anchor=np.array(anchors, dtype=np.int64),
        run_base=np.array(bases, dtype=np.int64),
        durations=list(durations),
        run_offsets=list(offsets),
    )


def _empty_index() -> pd.MultiIndex:
    return pd.MultiIndex.from_arrays([np.array([], dtype=object), np.array([], dtype=object)])


def _table(
    states: _States, keys: pd.MultiIndex, settings: DetectionSettings
) -> tuple[SeriesTable, np.ndarray, pd.MultiIndex]:
    """A table of the stored states plus a fresh row per new key; the rows of `keys`, and
    the (kind, key) of every table row."""
    at = states.index.get_indexer(keys) if len(states) else np.full(len(keys), -1)
    new = np.flatnonzero(at < 0)
    rows = at.astype(np.int64)
    rows[new] = len(states) + np.arange(len(new))
    table = SeriesTable(len(states) + len(new), settings)
    n, width = len(states), settings.window
    if n:
        durations = np.frombuffer(b"".join(states.durations), dtype="<f8").reshape(n, width)
        offsets = np.frombuffer(b"".join(states.run_offsets), dtype="<i4").reshape(n, width)
        table.duration_s[:n] = durations
        table.run_id[:n] = np.where(np.isnan(durations), 0, offsets + states.run_base[:, None])
        table.count[:n] = states.count
        table.anchor[:n] = states.anchor
    return table, rows, states.index.append(keys[new]) if n else keys[new]


# One stage_series row as binary COPY sends it: field count, then each field's length and
# value (integers big-endian); the two arrays are bytea holding little-endian numbers.
def _row_dtype(width: int) -> np.dtype[Any]:
    return np.dtype(
        [
            ("fields", ">i2"), ("id_len", ">i4"), ("id", ">i8"), ("count_len", ">i4"),
            ("count", ">i4"), ("anchor_len", ">i4"), ("anchor", ">i4"), ("base_len", ">i4"),
            ("base", ">i8"), ("d_len", ">i4"), ("d", "<f8", (width,)), ("o_len", ">i4"),
            ("o", "<i4", (width,)),
        ]
    )  # fmt: skip


def _write_states(
    conn: psycopg.Connection[Any],
    run: RunToDetect,
    keys: pd.MultiIndex,
    table: SeriesTable,
    rows: np.ndarray,
    states: _States,
) -> None:
    """Write the touched rows' states back: UPDATE the stored ones (one binary COPY of
    fixed-width rows, built by numpy), INSERT the new ones."""
    durations = table.duration_s[rows]
    valid = ~np.isnan(durations)
    ids = table.run_id[rows]
    first = np.argmax(valid, axis=1)
    base = np.where(valid.any(axis=1), ids[np.arange(len(rows)), first], 0)
    offsets = np.where(valid, ids - base[:, None], 0)
    if len(offsets) and (offsets.min() < 0 or offsets.max() > np.iinfo(np.int32).max):
        raise ValueError("a series' run ids span more than an int32 offset")
    stored = rows < len(states)
    if stored.any():
        _update_stored(conn, table, rows[stored], durations[stored], base[stored],
                       offsets[stored], states.ids[rows[stored]])  # fmt: skip
    fresh = np.flatnonzero(~stored)
    if len(fresh):
        with conn.cursor().copy(
            "COPY change_series (project_id, cell_id, kind, key, count, anchor, run_base, "
            "durations, run_offsets) FROM STDIN"
        ) as copy:
            for i in fresh.tolist():
                row = int(rows[i])
                copy.write_row(
                    (
                        run.project_id, run.cell_id, keys[i][0], keys[i][1],
                        int(table.count[row]), int(table.anchor[row]), int(base[i]),
                        durations[i].astype("<f8").tobytes(),
                        offsets[i].astype("<i4").tobytes(),
                    )
                )  # fmt: skip


def _update_stored(
    conn: psycopg.Connection[Any],
    table: SeriesTable,
    rows: np.ndarray,
    durations: np.ndarray,
    base: np.ndarray,
    offsets: np.ndarray,
    ids: np.ndarray,
) -> None:
    width = table.settings.window
    packed = np.zeros(len(rows), dtype=_row_dtype(width))
    packed["fields"] = 6
    for name, size in (("id", 8), ("count", 4), ("anchor", 4), ("base", 8)):
        packed[f"{name}_len"] = size
    packed["d_len"], packed["o_len"] = 8 * width, 4 * width
    packed["id"] = ids
    packed["count"] = table.count[rows]
    packed["anchor"] = table.anchor[rows]
    packed["base"] = base
    packed["d"] = durations
    packed["o"] = offsets
    conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS stage_series (id bigint, count integer, "
        "anchor integer, run_base bigint, durations bytea, run_offsets bytea) "
        "ON COMMIT DELETE ROWS"
    )
    conn.execute("TRUNCATE stage_series")
    with conn.cursor().copy("COPY stage_series FROM STDIN (FORMAT binary)") as copy:
        copy.write(_COPY_HEADER + packed.tobytes() + b"\xff\xff")
    conn.execute(
        """
        UPDATE change_series s SET count = st.count, anchor = st.anchor,
            run_base = st.run_base, durations = st.durations, run_offsets = st.run_offsets
        FROM stage_series st WHERE s.id = st.id
        """
    )


_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack("!ii", 0, 0)


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
        "SELECT tr.test_id, tc.file, tr.outcome, tr.duration_s, tr.setup_s, tr.call_s, "
        "tr.teardown_s, tr.cpu_s, tr.cpu_wait_s FROM test_result tr "
        "JOIN test_case tc ON tc.id = tr.test_id "
        "WHERE tr.project_id = %s AND tr.day = %s AND tr.run_id = %s",
        (run.project_id, day, run.run_id),
    ).fetchall()
    columns = [
        "test_id", "file", "outcome", "duration_s", "setup_s", "call_s", "teardown_s", "cpu_s",
        "cpu_wait_s",
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=columns)
    for name in columns[3:]:
        frame[name] = pd.to_numeric(frame[name], errors="coerce").astype(float)
    return frame
