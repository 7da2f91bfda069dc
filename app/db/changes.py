"""Reads and state writes of the stored duration changes (docs/changes.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

import pandas as pd
from psycopg import sql
from sqlalchemy import Connection, text

from analysis.changes.attribution import pick_default_branch
from analysis.changes.step_series import nearest_runs
from app.db.copy_frames import read_frame

CHANGE_STATES = ("open", "acknowledged", "resolved")
# The most changes one answer lists (newest first before ranking).
MAX_CHANGES = 500


@dataclass(frozen=True)
class ChangeQuery:
    """Which changes to list: every field narrows (None: any)."""

    state: str | None = None
    since: date | None = None
    kind: str | None = None
    tests: tuple[str, ...] = ()  # any of these nodeids
    files: tuple[str, ...] = ()  # any of these files (their file changes and tests' changes)
    jobs: tuple[str, ...] = ()
    change_id: int | None = None
    min_delta_s: float | None = None  # at least this many seconds per run, added or saved
    min_relative: float | None = None  # at least this share of the time before, either way


def load_changes(conn: Connection, project_id: int, query: ChangeQuery) -> pd.DataFrame:
    """The project's changes with their cell, test and run names, newest first."""
    return read_frame(conn, *changes_statement(project_id, query))


def changes_statement(
    project_id: int, query: ChangeQuery
) -> tuple[sql.Composed, dict[str, object]]:
    """load_changes' statement and parameters: at most MAX_CHANGES rows, read newest first
    along the (project_id, at_after) index."""
    where = [sql.SQL("d.project_id = %(project)s")]
    params: dict[str, object] = {"project": project_id, "limit": MAX_CHANGES}
    for name, clause in (
        ("state", "d.state = %(state)s"),
        ("since", "d.at_after >= %(since)s"),
        ("kind", "d.kind = %(kind)s"),
        ("tests", "d.kind = 'test' AND tc.nodeid = ANY(%(tests)s)"),
        ("files", "(tc.file = ANY(%(files)s) OR (d.kind = 'file' AND d.key = ANY(%(files)s)))"),
        ("jobs", "c.job = ANY(%(jobs)s)"),
        ("change_id", "d.id = %(change_id)s"),
        ("min_delta_s", "abs(d.median_after_s - d.median_before_s) >= %(min_delta_s)s"),
        (
            "min_relative",
            "abs(d.median_after_s / nullif(d.median_before_s, 0) - 1) >= %(min_relative)s",
        ),
    ):
        value = getattr(query, name)
        if isinstance(value, tuple):
            value = list(value) or None
        if value is not None:
            where.append(sql.SQL(clause))  # type: ignore[arg-type]
            params[name] = value
    return (
        sql.SQL(
            """
            SELECT d.id, d.cell_id, d.kind, d.key, tc.nodeid,
                coalesce(tc.file, CASE WHEN d.kind = 'file' THEN d.key
                    WHEN d.kind = 'function' THEN split_part(d.key, '::', 1) END)
                AS file, coalesce(c.job, '') AS job, coalesce(c.machine, '') AS machine,
                coalesce(c.branch, ra.branch, '') AS branch,
                coalesce(c.labels_key, '') AS labels_key,
                d.commit_before, d.commit_after, d.at_before, d.at_after, d.runs_before,
                d.runs_after, d.median_before_s, d.median_after_s, d.spread_before_s,
                d.spread_after_s, d.noise, d.z, d.between_commits, d.between_complete,
                d.state, d.state_at, d.detected_at, ra.pipeline AS pipeline_after,
                ra.runner AS runner, ra.upload_id AS upload_after,
                ra.merged_requests AS merged_after,
                nullif(ua.metadata ->> 'pull_request', '') AS request_after
            FROM duration_change d
            LEFT JOIN cell c ON c.id = d.cell_id  -- none for a pipeline's change
            LEFT JOIN test_case tc ON tc.id = CASE WHEN d.kind = 'test' THEN d.key::bigint END
            LEFT JOIN run ra ON ra.id = d.run_id_after
            LEFT JOIN upload ua ON ua.id = ra.upload_id
            WHERE {}
            ORDER BY d.at_after DESC, d.id DESC
            LIMIT %(limit)s
            """
        ).format(sql.SQL(" AND ").join(where)),
        params,
    )


def recent_run_rates(
    conn: Connection, project_id: int, branch: str | None, *, days: int = 28
) -> tuple[dict[int, float], float | None]:
    """Runs a week per cell over the last `days` (or since the project's first run in them,
    if later), and the default branch's pipelines a week (None without a branch)."""
    since = date.today() - timedelta(days=days - 1)
    rows = conn.execute(
        text(
            "SELECT cell_id, count(*), min(day) FROM run "
            "WHERE project_id = :p AND day >= :since GROUP BY cell_id"
        ),
        {"p": project_id, "since": since},
    ).all()
    if not rows:
        return {}, None
    first = min(r[2] for r in rows)
    weeks = max((date.today() - first).days + 1, 7) / 7.0
    per_cell = {int(r[0]): int(r[1]) / weeks for r in rows}
    if branch is None:
        return per_cell, None
    pipelines = conn.execute(
        text(
            "SELECT count(DISTINCT pipeline) FROM run WHERE project_id = :p AND day >= :since "
            "AND branch = :b AND pipeline IS NOT NULL"
        ),
        {"p": project_id, "since": since, "b": branch},
    ).scalar_one()
    return per_cell, int(pipelines) / weeks


def set_change_state(conn: Connection, project_id: int, change_id: int, state: str) -> bool:
    """Set a change's state; False when the project has no such change."""
    if state not in CHANGE_STATES:
        raise ValueError(f"unknown state {state!r}")
    done = conn.execute(
        text(
            "UPDATE duration_change SET state = :state, state_at = now() "
            "WHERE id = :id AND project_id = :project"
        ),
        {"state": state, "id": change_id, "project": project_id},
    )
    return done.rowcount == 1


def project_default_branch(conn: Connection, project_id: int) -> str | None:
    """The branch whose runs are watched: the project's override, else detected."""
    override = conn.execute(
        text("SELECT default_branch FROM project WHERE id = :p"), {"p": project_id}
    ).scalar()
    cells = conn.execute(
        text("SELECT branch, count(*) FROM cell WHERE project_id = :p GROUP BY branch"),
        {"p": project_id},
    ).all()
    return pick_default_branch(override, [(str(b), int(n)) for b, n in cells])


def changes_untold(conn: Connection, project_id: int, event: str, *, since: datetime) -> list[int]:
    """Ids of the project's changes detected since `since` that some webhook hearing `event`
    has no delivery of yet (the delivery's dedupe key is "change:<id>")."""
    rows = conn.execute(
        text(
            """
            SELECT c.id FROM duration_change c
            WHERE c.project_id = :project AND c.detected_at >= :since
              AND EXISTS (
                SELECT 1 FROM webhook w
                WHERE w.project_id = c.project_id AND :event = ANY(w.events)
                  AND NOT EXISTS (
                    SELECT 1 FROM webhook_delivery d
                    WHERE d.webhook_id = w.id AND d.dedupe_key = 'change:' || c.id
                  )
              )
            ORDER BY c.id
            """
        ),
        {"project": project_id, "event": event, "since": since},
    ).all()
    return [int(row.id) for row in rows]


def set_default_branch(conn: Connection, project_id: int, branch: str | None) -> None:
    """Name the project's default branch (None: detect it again)."""
    conn.execute(
        text("UPDATE project SET default_branch = :b WHERE id = :p"),
        {"b": branch, "p": project_id},
    )


def default_branch_override(conn: Connection, project_id: int) -> str | None:
    """The branch the project's admins named, if any."""
    value = conn.execute(
        text("SELECT default_branch FROM project WHERE id = :p"), {"p": project_id}
    ).scalar()
    return None if value is None else str(value)


# Runs a change's series is drawn over, on either side of its step.
SERIES_RUNS = 40
# Where points need every result of their runs (recorded CPU time), at most this many results
# are read: the runs nearest the step are kept (a request's work stays bounded).
SERIES_MAX_RESULTS = 300_000


@dataclass(frozen=True)
class ChangeSource:
    """Where a stored change's series lives: its kind and key in its cell (a pipeline's: in
    the project's pipelines of its branch), and the first run after its step."""

    kind: str
    key: str
    cell_id: int | None
    run_id_after: int
    branch: str | None


def change_source(conn: Connection, project_id: int, change_id: int) -> ChangeSource | None:
    """The change's series, or None when the project has no such change."""
    row = conn.execute(
        text(
            "SELECT d.kind, d.key, d.cell_id, d.run_id_after, coalesce(c.branch, r.branch) "
            "FROM duration_change d LEFT JOIN cell c ON c.id = d.cell_id "
            "LEFT JOIN run r ON r.id = d.run_id_after WHERE d.id = :id AND d.project_id = :p"
        ),
        {"id": change_id, "p": project_id},
    ).first()
    if row is None:
        return None
    kind, key, cell_id, run_id_after, branch = row
    return ChangeSource(
        str(kind), str(key), None if cell_id is None else int(cell_id), int(run_id_after), branch
    )


def runs_around(conn: Connection, cell_id: int, run_id_after: int) -> pd.DataFrame:
    """The cell's SERIES_RUNS runs before the step and as many from its first run after, oldest
    first, with what a series point is made of (analysis.changes.step_series.RUN_MEASURES)."""
    columns = (
        "SELECT id AS run_id, commit_sha AS commit, started_at, day, wall_s, job_wall_s, "
        "cpu_s, xdist_workers, tests FROM run WHERE cell_id = %(cell)s"
    )
    return read_frame(
        conn,
        _composed(
            f"SELECT * FROM (({columns} AND id < %(after)s ORDER BY id DESC LIMIT %(n)s) "
            f"UNION ALL ({columns} AND id >= %(after)s ORDER BY id LIMIT %(n)s)) w "
            "ORDER BY run_id"
        ),
        {"cell": cell_id, "after": run_id_after, "n": SERIES_RUNS},
    )


def series_results(
    conn: Connection,
    project_id: int,
    runs: pd.DataFrame,
    kind: str,
    key: str,
    run_id_after: int,
    *,
    max_results: int = SERIES_MAX_RESULTS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(runs, results): the stored results a point of series (kind, key) is made of, the
    test's or the file's; where the runs recorded CPU time, every result of them (the CPU
    share is read from all), for the runs nearest the step within `max_results` (the runs
    left out are left out of the answer too)."""
    narrow = {
        "test": "tr.test_id = %(key)s::bigint",
        "function": "tc.file = split_part(%(key)s, '::', 1)",
        "file": "tc.file = %(key)s",
    }.get(kind)
    if narrow is None or runs.empty:
        return runs, pd.DataFrame(columns=["run_id", *_RESULT_COLUMNS])
    params = {
        "p": project_id,
        "days": sorted(set(runs["day"])),
        "runs": [int(r) for r in runs["run_id"]],
        "key": key,
    }
    found = read_frame(conn, _results_statement(narrow), params)
    if found["cpu_s"].notna().any():  # the run's CPU share is read from all its results
        ids = runs["run_id"].to_numpy()
        runs = runs.loc[nearest_runs(ids, runs["tests"].to_numpy(), run_id_after, max_results)]
        params = {
            **params,
            "runs": [int(r) for r in runs["run_id"]],
            "days": sorted(set(runs["day"])),
        }
        found = read_frame(conn, _results_statement("true"), params)
    for name in _RESULT_COLUMNS[5:]:
        found[name] = pd.to_numeric(found[name], errors="coerce").astype(float)
    return runs, found


_RESULT_COLUMNS = (
    "test_id", "nodeid", "params", "file", "outcome", "duration_s", "setup_s", "call_s",
    "teardown_s", "cpu_s", "cpu_wait_s",
)  # fmt: skip


def _results_statement(narrow: str) -> sql.Composed:
    return sql.SQL(
        "SELECT tr.run_id, tr.test_id, tc.nodeid, tc.params, tc.file, tr.outcome, tr.duration_s, "
        "tr.setup_s, tr.call_s, tr.teardown_s, tr.cpu_s, tr.cpu_wait_s FROM test_result tr "
        "JOIN test_case tc ON tc.id = tr.test_id WHERE tr.project_id = %(p)s "
        "AND tr.day = ANY(%(days)s) AND tr.run_id = ANY(%(runs)s) AND {}"
    ).format(sql.SQL(narrow))  # type: ignore[arg-type]


def pipeline_runs_around(
    conn: Connection, project_id: int, branch: str, key: str, run_id_after: int
) -> pd.DataFrame:
    """The branch's pipeline points of series `key` (wall or machine) on either side of the
    step, oldest first, as the pipeline series took them: run_id, commit, started_at,
    duration_s, after."""
    column = {"wall": "w.wall_s", "machine": "w.machine_s"}[key]

    def side(after: bool) -> str:
        return (
            f"SELECT w.run_id, r.commit_sha AS commit, r.started_at, {column} AS duration_s, "
            f"{after} AS after, w.first_run_id FROM pipeline_watch w "
            "JOIN run r ON r.id = w.run_id WHERE w.project_id = %(p)s AND w.branch = %(b)s "
            f"AND w.pushed AND w.first_run_id {'>=' if after else '<'} "
            "(SELECT first_run_id FROM pipeline_watch WHERE project_id = %(p)s "
            "AND branch = %(b)s AND run_id = %(after)s LIMIT 1) "
            f"ORDER BY w.first_run_id {'' if after else 'DESC'} LIMIT %(n)s"
        )

    return read_frame(
        conn,
        _composed(
            f"SELECT run_id, commit, started_at, duration_s, after FROM (({side(False)}) "
            f"UNION ALL ({side(True)})) p ORDER BY first_run_id"
        ),
        {"p": project_id, "b": branch, "after": run_id_after, "n": SERIES_RUNS},
    )


def _composed(statement: str) -> sql.Composed:
    """A statement with no identifiers to quote, as read_frame takes it."""
    return sql.Composed([sql.SQL(statement)])  # type: ignore[arg-type]
