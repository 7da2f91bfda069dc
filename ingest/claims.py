"""The worker's claim and lease SQL on the upload queue: the claim itself (the upload row,
locked FOR NO KEY UPDATE SKIP LOCKED), the attempt rows a claim spends or gives back, and
the failed upload's final row. The loop, LISTEN and shutdown stay in ingest/worker.py."""

from __future__ import annotations

import logging
from typing import Any

import psycopg

from ingest.attempts import spent_sql

log = logging.getLogger("laptime.worker")

# The slug comes from a subquery, not a join: FOR ... UPDATE locks the rows of the FROM
# tables, and a locked project row would serialize the workers of one project.
CLAIM = """
SELECT id, project_id, (SELECT slug FROM project WHERE project.id = upload.project_id),
    metadata, job, created_at FROM upload
WHERE status = 'queued' ORDER BY id = ANY(%(deferred)s), id LIMIT 1
FOR NO KEY UPDATE SKIP LOCKED
"""


def attempts_so_far(side: psycopg.Connection[Any], upload_id: int) -> tuple[int, str | None]:
    """The attempts the upload has spent (ingest/attempts.py) and the last error recorded."""
    row = side.execute(
        "SELECT count(*) FILTER (WHERE " + spent_sql("a") + "), (SELECT error FROM "
        "upload_attempt WHERE upload_id = %(u)s AND error IS NOT NULL ORDER BY id DESC LIMIT 1) "
        "FROM upload_attempt a WHERE a.upload_id = %(u)s",
        {"u": upload_id},
    ).fetchone()
    assert row is not None
    return int(row[0]), row[1]


def record_attempt(side: psycopg.Connection[Any], upload_id: int, name: str) -> int:
    """Record a claim's attempt on the side connection (committed at once); its id."""
    row = side.execute(
        "INSERT INTO upload_attempt (upload_id, worker) VALUES (%s, %s) RETURNING id",
        (upload_id, name),
    ).fetchone()
    assert row is not None
    return int(row[0])


def drop_unspent(conn: psycopg.Connection[Any], upload_id: int, keep: int | None) -> None:
    """Drop the upload's claims that spent nothing (their giving back failed), in the
    transaction that finishes it: its attempt rows then are exactly the attempts it spent."""
    conn.execute(
        "DELETE FROM upload_attempt a WHERE a.upload_id = %s AND a.id IS DISTINCT FROM %s "
        "AND NOT " + spent_sql("a"),
        (upload_id, keep),
    )


def forget_attempts(side: psycopg.Connection[Any], attempt_ids: list[int]) -> None:
    """Give back attempts that failed for a transient reason (best effort: a row left behind
    spends nothing while its worker is connected, see ingest/attempts.py)."""
    if not attempt_ids or side.closed or side.broken:
        return
    try:
        side.execute("DELETE FROM upload_attempt WHERE id = ANY(%s)", (attempt_ids,))
        attempt_ids.clear()
    except psycopg.Error:
        log.warning("could not give back attempts %s yet", attempt_ids)


def finish_failed(
    conn: psycopg.Connection[Any], upload_id: int, attempts: int, code: str, detail: str
) -> None:
    """Mark the upload failed with its error code and detail (in the caller's transaction)."""
    conn.execute(
        """
        UPDATE upload SET status = 'failed', error_code = %s, error_detail = %s, attempts = %s,
            finished_at = clock_timestamp()
        WHERE id = %s
        """,
        (code, detail[:4000], attempts, upload_id),
    )


def record_error(side: psycopg.Connection[Any], attempt_id: int, error: str) -> None:
    """Note on an attempt why it failed (the upload's error if it runs out of attempts)."""
    side.execute("UPDATE upload_attempt SET error = %s WHERE id = %s", (error[:2000], attempt_id))
