"""A pipeline's wall and machine time pushed into its project's series once it is final.

Called inside a default-branch run's detection transaction (ingest/change_detection.py), under
the project's advisory lock: the run's pipeline is watched (`pipeline_watch`), the watched
pipelines that are final now (analysis/changes/pipelines.py says when) get their point pushed
into the branch's two series (`pipeline_series`) and are marked final, all in that
transaction. A pipeline is marked final once (the row's `final_at`), so its point is pushed
exactly once: a worker that dies before the commit leaves the run's mark, and the retry
decides again from the same stored runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import psycopg

from analysis.changes import Change, DetectionSettings, SeriesState, empty_state, update_state
from analysis.changes.pipelines import (
    EXPECTED_FROM,
    PIPELINE_KEYS,
    PendingPipeline,
    final_pipelines,
    pipeline_point,
)
from analysis.changes.points import SeriesPoints

# Advisory lock class of a project's pipeline series (a cell's is 727029).
LOCK_CLASS = 727030

_PENDING = """
SELECT w.pipeline, (SELECT count(*) FROM pipeline_watch l WHERE l.project_id = w.project_id
    AND l.branch = w.branch AND l.first_run_id > w.first_run_id)
FROM pipeline_watch w
WHERE w.project_id = %s AND w.branch = %s AND w.final_at IS NULL
ORDER BY w.first_run_id, w.pipeline
"""
_HISTORY = """
SELECT pipeline FROM pipeline_watch
WHERE project_id = %s AND branch = %s AND final_at IS NOT NULL
ORDER BY first_run_id DESC, pipeline DESC LIMIT %s
"""
_JOBS = """
SELECT pipeline, id, cell_id, job_wall_s, wall_s FROM run
WHERE project_id = %s AND branch = %s AND pipeline = ANY(%s)
ORDER BY started_at, id
"""


def watch_pipeline(
    conn: psycopg.Connection[Any],
    *,
    project_id: int,
    branch: str,
    pipeline: str,
    settings: DetectionSettings,
) -> list[tuple[tuple[str, str], Change]]:
    """Watch the detected run's pipeline and push every watched pipeline final now; the
    changes their points confirmed, as ((kind, key), change), with the confirming run."""
    conn.execute("SELECT pg_advisory_xact_lock(%s, hashint8(%s))", (LOCK_CLASS, project_id))
    conn.execute(
        "INSERT INTO pipeline_watch (project_id, pipeline, branch, first_run_id) "
        "SELECT %s, %s, %s, min(id) FROM run "
        "WHERE project_id = %s AND pipeline = %s AND branch = %s HAVING count(*) > 0 "
        "ON CONFLICT (project_id, pipeline) DO NOTHING",
        (project_id, pipeline, branch, project_id, pipeline, branch),
    )
    pending = conn.execute(_PENDING, (project_id, branch)).fetchall()
    if not pending:
        return []
    history = [r[0] for r in conn.execute(_HISTORY, (project_id, branch, EXPECTED_FROM))]
    names = [str(p) for p, _ in pending] + history
    jobs: dict[str, list[tuple[Any, ...]]] = {name: [] for name in names}
    for row in conn.execute(_JOBS, (project_id, branch, names)).fetchall():
        jobs[str(row[0])].append(row[1:])
    final = final_pipelines(
        [PendingPipeline(str(p), _cells(jobs[str(p)]), int(later)) for p, later in pending],
        [_cells(jobs[name]) for name in reversed(history)],
    )
    found: list[tuple[tuple[str, str], Change]] = []
    for one in final:
        own = jobs[one.pipeline]
        point = (
            pipeline_point([{"job_wall_s": j[2], "wall_s": j[3]} for j in own])
            if one.push and own
            else None
        )
        # The pipeline's first job to start names its point (none: its runs were deleted).
        run_id = int(own[0][0]) if own else None
        conn.execute(
            "UPDATE pipeline_watch SET final_at = now(), pushed = %s, run_id = %s, jobs = %s, "
            "wall_s = %s, machine_s = %s "
            "WHERE project_id = %s AND pipeline = %s AND final_at IS NULL",
            (
                point is not None, run_id, len(own),
                None if point is None else point["wall"],
                None if point is None else point["machine"],
                project_id, one.pipeline,
            ),
        )  # fmt: skip
        if point is not None and run_id is not None:
            found += _push(conn, project_id, branch, run_id, point, settings)
    return found


def _cells(jobs: Sequence[tuple[Any, ...]]) -> frozenset[int]:
    return frozenset(int(job[1]) for job in jobs)


def _push(
    conn: psycopg.Connection[Any],
    project_id: int,
    branch: str,
    run_id: int,
    point: dict[str, float],
    settings: DetectionSettings,
) -> list[tuple[tuple[str, str], Change]]:
    """One point into each of the branch's pipeline series; the changes it confirmed."""
    stored = {
        str(key): (int(count), int(anchor), durations, run_ids)
        for key, count, anchor, durations, run_ids in conn.execute(
            "SELECT key, count, anchor, durations, run_ids FROM pipeline_series "
            "WHERE project_id = %s AND branch = %s",
            (project_id, branch),
        ).fetchall()
    }
    found: list[tuple[tuple[str, str], Change]] = []
    for key in PIPELINE_KEYS:
        state = _state(*stored[key]) if key in stored else empty_state()
        state, changes = update_state(state, _points([point[key]], [run_id]), settings)
        conn.execute(
            "INSERT INTO pipeline_series (project_id, branch, key, count, anchor, durations, "
            "run_ids) VALUES (%s, %s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (project_id, branch, key) DO UPDATE SET count = excluded.count, "
            "anchor = excluded.anchor, durations = excluded.durations, run_ids = excluded.run_ids",
            (
                project_id, branch, key, state.count, state.anchor,
                state.tail.duration_s.tolist(), state.tail.run_id.tolist(),
            ),
        )  # fmt: skip
        found += [(("pipeline", key), change) for change in changes]
    return found


def _state(count: int, anchor: int, durations: list[float], run_ids: list[int]) -> SeriesState:
    return SeriesState(count=count, anchor=anchor, tail=_points(durations, run_ids))


def _points(durations: Sequence[float], run_ids: Sequence[int]) -> SeriesPoints:
    """Points as the series keeps them: the runs' commits and times are read back from the
    run table when a change is stored, as for a cell's series."""
    n = len(durations)
    return SeriesPoints(
        np.asarray(durations, dtype=float),
        np.asarray(run_ids, dtype=np.int64),
        np.full(n, "", dtype=object),
        np.zeros(n, dtype="datetime64[ns]"),
        np.full(n, None, dtype=object),
    )
