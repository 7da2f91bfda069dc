"""Failed authentications per client address, counted in the database (table auth_failure).

Every web process of a deployment reads and writes the same rows, so the budget holds for
the deployment (`laptime serve --workers N` does not multiply it). A fixed window: the first
failure of an address opens a window of `window_s`; within it the address may fail
`failures` times, after which it is refused (429, before its token is even looked up, so
guessing stays slow) until the window ends, and `Retry-After` says when that is. Addresses
that never fail cost nothing. Rows of ended windows are deleted as failures are counted, so
the table holds only the addresses that failed within the last window.
"""

from __future__ import annotations

import math
from datetime import datetime

from sqlalchemy import Connection, text


def refusal_wait_s(
    conn: Connection, client: str, *, failures: int, window_s: float, now: datetime | None = None
) -> int | None:
    """Whole seconds until `client`'s window ends if it has spent its budget, else None."""
    left = conn.execute(
        text(
            "SELECT extract(epoch FROM window_start + make_interval(secs => :w) "
            "- coalesce(CAST(:now AS timestamptz), now())) "
            "FROM auth_failure WHERE client = :c AND failures >= :f"
        ),
        {"c": client, "f": failures, "w": window_s, "now": now},
    ).scalar_one_or_none()
    if left is None or left <= 0:
        return None
    return max(1, math.ceil(float(left)))


def record_failure(
    conn: Connection, client: str, *, window_s: float, now: datetime | None = None
) -> None:
    """Count one failure of `client` (opening a new window when its last one has ended), and
    forget the addresses whose windows have ended."""
    params = {"c": client, "w": window_s, "now": now}
    # One statement: concurrent failures of one address from several processes all count.
    conn.execute(
        text(
            """
            WITH t AS (SELECT coalesce(CAST(:now AS timestamptz), now()) AS now)
            INSERT INTO auth_failure AS a (client, window_start, failures)
            SELECT :c, t.now, 1 FROM t
            ON CONFLICT (client) DO UPDATE SET
                window_start = CASE WHEN a.window_start + make_interval(secs => :w)
                    <= excluded.window_start THEN excluded.window_start ELSE a.window_start END,
                failures = CASE WHEN a.window_start + make_interval(secs => :w)
                    <= excluded.window_start THEN 1 ELSE a.failures + 1 END
            """
        ),
        params,
    )
    conn.execute(
        text(
            "DELETE FROM auth_failure WHERE window_start + make_interval(secs => :w) "
            "<= coalesce(CAST(:now AS timestamptz), now()) AND client <> :c"
        ),
        params,
    )


def clients_counted(conn: Connection) -> int:
    """How many addresses have a window open (the table's size)."""
    return int(conn.execute(text("SELECT count(*) FROM auth_failure")).scalar_one())
