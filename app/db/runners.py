"""The test runner stored on runs: which runner's words a plan or shard is written in."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, text


def runner_of_runs(conn: Connection, project_id: int, run_ids: Sequence[int]) -> str | None:
    """The runner behind most of `run_ids`' results (None when no run recorded one)."""
    if not run_ids:
        return None
    row = conn.execute(
        text(
            "SELECT runner FROM run WHERE project_id = :project AND id = ANY(:ids) "
            "AND runner IS NOT NULL GROUP BY runner ORDER BY sum(tests) DESC, runner LIMIT 1"
        ),
        {"project": project_id, "ids": [int(i) for i in run_ids]},
    ).first()
    return str(row[0]) if row else None
