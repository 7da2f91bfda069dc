"""Write one merged run into Postgres: COPY into a staging table, then set-based SQL.

Everything happens on the caller's connection inside the caller's transaction (the worker
owns it), so a run is stored completely or not at all.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import psycopg
from pandas.util import hash_array

from analysis.frames import labels_key
from ingest.merge import MergedRun

STAGE_COLUMNS = (
    "test_id",
    "nodeid",
    "file",
    "classname",
    "function",
    "params",
    "param_values",
    "markers",
    "outcome",
    "duration_s",
    "setup_s",
    "call_s",
    "teardown_s",
    "attempts",
    "flaky",
    "peak_rss_mib",
    "worker",
    "message",
)

_STAGE_DDL = """
CREATE TEMP TABLE IF NOT EXISTS stage_result (
    test_id bigint, nodeid text, file text, classname text, function text, params text,
    param_values jsonb, markers text[], outcome text, duration_s float8, setup_s float8,
    call_s float8, teardown_s float8, attempts smallint, flaky boolean, peak_rss_mib real,
    worker text, message text
) ON COMMIT DELETE ROWS
"""


@dataclass(frozen=True)
class RunMetadata:
    """What the uploader told us about the CI job (all optional but the job name)."""

    job: str
    pipeline: str | None = None
    commit: str | None = None
    branch: str | None = None
    machine: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    started_at: datetime | None = None
    wall_s: float | None = None
    peak_rss_mib: float | None = None


@dataclass(frozen=True)
class StoreResult:
    """Counts of what one run stored."""

    run_id: int
    results: int
    new_tests: int
    missing_durations: int


def compute_test_ids(project_id: int, nodeids: pd.Series) -> np.ndarray:
    """Deterministic 63-bit test ids: SipHash of the nodeid keyed by the project."""
    key = f"laptime{project_id:09d}"[-16:].rjust(16, "0")
    hashed = hash_array(nodeids.to_numpy(dtype=object), hash_key=key, categorize=True)
    return (hashed >> np.uint64(1)).astype(np.int64)


def store_run(
    conn: psycopg.Connection[Any],
    *,
    project_id: int,
    upload_id: int,
    meta: RunMetadata,
    merged: MergedRun,
) -> StoreResult:
    """Insert the run, its results, new test cases and the daily rollups."""
    results = merged.results
    started_at = meta.started_at or _session_start(merged) or datetime.now(UTC)
    day = started_at.astimezone(UTC).date()
    wall_s = meta.wall_s if meta.wall_s is not None else merged.session.wall_s
    peak = meta.peak_rss_mib if meta.peak_rss_mib is not None else merged.session.peak_rss_mib
    workers = merged.session.xdist_workers or 1
    durations = results["duration_s"]
    test_s = float(durations.sum()) if len(results) else 0.0
    missing = int(durations.isna().sum())
    lkey = labels_key(meta.labels)

    _ensure_partition(conn, day)
    run_id = _insert_run(
        conn,
        project_id=project_id,
        upload_id=upload_id,
        meta=meta,
        started_at=started_at,
        day=day,
        wall_s=wall_s,
        peak_rss_mib=peak,
        workers=workers,
        merged=merged,
        test_s=test_s,
        missing=missing,
        labels_key=lkey,
    )
    if results.empty:
        return StoreResult(run_id=run_id, results=0, new_tests=0, missing_durations=0)

    conn.execute(_STAGE_DDL)
    _copy_stage(conn, project_id, results)
    new_tests = _upsert_test_cases(conn, project_id, day)
    params = {"project": project_id, "day": day, "run": run_id}
    conn.execute(
        """
        INSERT INTO test_result (project_id, day, run_id, test_id, outcome, duration_s,
            setup_s, call_s, teardown_s, attempts, flaky, peak_rss_mib, worker, message)
        SELECT %(project)s, %(day)s, %(run)s, test_id, outcome, duration_s, setup_s, call_s,
            teardown_s, attempts, flaky, peak_rss_mib, worker, message
        FROM stage_result
        """,
        params,
    )
    cell = {
        **params,
        "job": meta.job,
        "machine": meta.machine or "",
        "branch": meta.branch or "",
        "labels_key": lkey,
    }
    _upsert_rollups(conn, cell)
    return StoreResult(
        run_id=run_id, results=len(results), new_tests=new_tests, missing_durations=missing
    )


def _session_start(merged: MergedRun) -> datetime | None:
    raw = merged.session.started_at
    if not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _ensure_partition(conn: psycopg.Connection[Any], day: date) -> None:
    name = f"test_result_{day:%Y%m%d}"
    exists = conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()
    if exists and exists[0]:
        return
    # Serialise creation: two workers adding the same day's partition would otherwise race.
    conn.execute("SELECT pg_advisory_xact_lock(727002)")
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF test_result "
        f"FOR VALUES FROM ('{day.isoformat()}') TO ('{(day + timedelta(days=1)).isoformat()}')"
    )


def _insert_run(
    conn: psycopg.Connection[Any],
    *,
    project_id: int,
    upload_id: int,
    meta: RunMetadata,
    started_at: datetime,
    day: date,
    wall_s: float | None,
    peak_rss_mib: float | None,
    workers: int,
    merged: MergedRun,
    test_s: float,
    missing: int,
    labels_key: str,
) -> int:
    row = conn.execute(
        """
        INSERT INTO run (project_id, upload_id, pipeline, job, commit_sha, branch, machine,
            labels, labels_key, started_at, day, wall_s, test_s, tests, peak_rss_mib,
            xdist_workers, partial, hidden_rows, missing)
        VALUES (%(project)s, %(upload)s, %(pipeline)s, %(job)s, %(commit)s, %(branch)s,
            %(machine)s, %(labels)s, %(labels_key)s, %(started_at)s, %(day)s, %(wall_s)s,
            %(test_s)s, %(tests)s, %(peak)s, %(workers)s, %(partial)s, %(hidden)s, %(missing)s)
        RETURNING id
        """,
        {
            "project": project_id,
            "upload": upload_id,
            "pipeline": meta.pipeline,
            "job": meta.job,
            "commit": meta.commit,
            "branch": meta.branch,
            "machine": meta.machine,
            "labels": json.dumps(meta.labels),
            "labels_key": labels_key,
            "started_at": started_at,
            "day": day,
            "wall_s": wall_s,
            "test_s": test_s,
            "tests": len(merged.results),
            "peak": peak_rss_mib,
            "workers": workers,
            "partial": merged.partial,
            "hidden": merged.hidden_rows,
            "missing": missing,
        },
    ).fetchone()
    assert row is not None
    return int(row[0])


def _pg_array(values: pd.Series) -> pd.Series:
    """Render list-of-str cells as Postgres array literals; None stays NULL."""

    def render(items: Any) -> str | None:
        if items is None or (isinstance(items, float) and np.isnan(items)):
            return None
        quoted = ('"' + str(i).replace("\\", "\\\\").replace('"', '\\"') + '"' for i in items)
        return "{" + ",".join(quoted) + "}"

    # Few distinct marker sets exist, so render each once.
    as_key = values.map(
        lambda v: None if v is None else tuple(v) if not isinstance(v, float) else None
    )
    uniques = {k: render(k) for k in as_key.dropna().unique()}
    return as_key.map(uniques)


def _copy_stage(conn: psycopg.Connection[Any], project_id: int, results: pd.DataFrame) -> None:
    frame = pd.DataFrame(
        {
            "test_id": compute_test_ids(project_id, results["nodeid"]),
            "nodeid": results["nodeid"],
            "file": results["file"],
            "classname": results["classname"],
            "function": results["function"],
            "params": results["params"],
            "param_values": results["param_values"].map(
                lambda v: json.dumps(v) if isinstance(v, dict) else None
            ),
            "markers": _pg_array(results["markers"]),
            "outcome": results["outcome"],
            "duration_s": results["duration_s"],
            "setup_s": results["setup_s"],
            "call_s": results["call_s"],
            "teardown_s": results["teardown_s"],
            "attempts": results["attempts"],
            "flaky": results["flaky"].map({True: "t", False: "f"}),
            "peak_rss_mib": results["peak_rss_mib"],
            "worker": results["worker"],
            "message": results["message"],
        }
    )
    buffer = io.StringIO()
    # CSV COPY: an unquoted empty field is NULL; pandas quotes what needs quoting.
    frame.to_csv(buffer, header=False, index=False, na_rep="", float_format="%.10g")
    with conn.cursor().copy(
        f"COPY stage_result ({', '.join(STAGE_COLUMNS)}) FROM STDIN (FORMAT csv)"
    ) as copy:
        copy.write(buffer.getvalue())


def _upsert_test_cases(conn: psycopg.Connection[Any], project_id: int, day: date) -> int:
    # Only rows that are new or whose attributes changed are written, so an unchanged
    # suite re-uploaded costs index lookups, not dead tuples.
    cur = conn.execute(
        """
        INSERT INTO test_case AS t (id, project_id, nodeid, file, classname, function, params,
            param_values, markers, first_seen, last_seen)
        SELECT test_id, %(project)s, nodeid, file, classname, function, params, param_values,
            markers, %(day)s, %(day)s
        FROM stage_result ORDER BY test_id
        ON CONFLICT (id) DO UPDATE SET
            last_seen = greatest(t.last_seen, excluded.last_seen),
            first_seen = least(t.first_seen, excluded.first_seen),
            markers = coalesce(excluded.markers, t.markers),
            param_values = coalesce(excluded.param_values, t.param_values),
            file = coalesce(t.file, excluded.file)
        WHERE t.last_seen < excluded.last_seen
           OR t.first_seen > excluded.first_seen
           OR (excluded.markers IS NOT NULL AND t.markers IS DISTINCT FROM excluded.markers)
           OR (excluded.param_values IS NOT NULL AND t.param_values IS NULL)
        RETURNING (xmax = 0) AS inserted
        """,
        {"project": project_id, "day": day},
    )
    return sum(1 for (inserted,) in cur.fetchall() if inserted)


_ROLLUP_SUMS = """
    count(*), count(duration_s), coalesce(sum(duration_s), 0), max(duration_s),
    sum(setup_s), sum(call_s), sum(teardown_s),
    count(*) FILTER (WHERE outcome IN ('failed', 'error')), count(*) FILTER (WHERE flaky),
    max(peak_rss_mib)
"""

_ROLLUP_MERGE = """
    runs = r.runs + excluded.runs,
    known = r.known + excluded.known,
    total_s = r.total_s + excluded.total_s,
    max_s = greatest(r.max_s, excluded.max_s),
    setup_s = CASE WHEN r.setup_s IS NULL THEN excluded.setup_s
                   ELSE r.setup_s + coalesce(excluded.setup_s, 0) END,
    call_s = CASE WHEN r.call_s IS NULL THEN excluded.call_s
                  ELSE r.call_s + coalesce(excluded.call_s, 0) END,
    teardown_s = CASE WHEN r.teardown_s IS NULL THEN excluded.teardown_s
                      ELSE r.teardown_s + coalesce(excluded.teardown_s, 0) END,
    failures = r.failures + excluded.failures,
    flaky = r.flaky + excluded.flaky,
    peak_rss_mib = greatest(r.peak_rss_mib, excluded.peak_rss_mib)
"""


def _upsert_rollups(conn: psycopg.Connection[Any], cell: dict[str, Any]) -> None:
    # Sorted inserts take row locks in key order, so concurrent workers cannot deadlock.
    conn.execute(
        f"""
        INSERT INTO rollup_daily AS r (project_id, day, job, machine, branch, labels_key,
            test_id, runs, known, total_s, max_s, setup_s, call_s, teardown_s, failures, flaky,
            peak_rss_mib)
        SELECT %(project)s, %(day)s, %(job)s, %(machine)s, %(branch)s, %(labels_key)s,
            test_id, {_ROLLUP_SUMS}
        FROM stage_result GROUP BY test_id ORDER BY test_id
        ON CONFLICT (project_id, day, job, machine, branch, labels_key, test_id)
        DO UPDATE SET {_ROLLUP_MERGE}
        """,
        cell,
    )
    conn.execute(
        f"""
        INSERT INTO rollup_file_daily AS r (project_id, day, job, machine, branch, labels_key,
            file, runs, known, total_s, max_s, setup_s, call_s, teardown_s, failures, flaky,
            peak_rss_mib)
        SELECT %(project)s, %(day)s, %(job)s, %(machine)s, %(branch)s, %(labels_key)s,
            coalesce(file, '(unknown)'), {_ROLLUP_SUMS}
        FROM stage_result GROUP BY 7 ORDER BY 7
        ON CONFLICT (project_id, day, job, machine, branch, labels_key, file)
        DO UPDATE SET {_ROLLUP_MERGE}
        """,
        cell,
    )
