"""Which claims of an upload spent an attempt.

A worker writes an attempt row when it claims an upload (on a side connection, so the row
survives a worker killed mid-ingest). The row is spent when the claim failed for a reason
that is not the moment's (its `error` is set: a bug, a takeover) or when its worker is gone
(no session of it is connected: killed mid-ingest). A row with no error whose worker is still
connected is a claim that failed for a transient reason (ingest/failures.py) and whose giving
back needed a write the database could not take (a full disk): it never counts, and the
transaction that finishes the upload drops it. So a transient fault spends no attempt even when
the database cannot record anything.
"""

from __future__ import annotations

APPLICATION_PREFIX = "laptime-worker "


def application_name(worker: str) -> str:
    """The application_name every session of `worker` carries (63 bytes at most)."""
    return f"{APPLICATION_PREFIX}{worker}"[:63]


def spent_sql(alias: str) -> str:
    """SQL true when the upload_attempt row `alias` spent an attempt."""
    return (
        f"({alias}.error IS NOT NULL OR NOT EXISTS (SELECT 1 FROM pg_stat_activity s "
        f"WHERE s.application_name = left('{APPLICATION_PREFIX}' || {alias}.worker, 63)))"
    )
