"""What the ingestion worker counts: ingests by outcome, their duration, rows stored, beats.

Recorded after the ingest's transaction commits, never inside it: a rolled-back ingest is
retried, and counting it twice would make the counters disagree with the database.
The objects are prometheus_client's, so with PROMETHEUS_MULTIPROC_DIR set (app.metrics) a
worker process's counts reach the web process's /metrics through the shared directory.
"""

from __future__ import annotations

from prometheus_client import Counter, Histogram

# From a one-line report to a 500 MB one; an ingest past 10 minutes is a problem either way.
INGEST_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)

INGEST_SECONDS = Histogram(
    "laptime_ingest_duration_seconds",
    "Seconds from an upload's claim to the commit of its outcome, by outcome (done|failed).",
    ["outcome"],
    buckets=INGEST_BUCKETS_S,
)
UPLOADS_FAILED = Counter(
    "laptime_uploads_failed",
    "Uploads whose ingest ended failed, by error code (docs/errors.md).",
    ["code"],
)
ROWS_STORED = Counter("laptime_rows_stored", "Test results stored by ingests that committed.")
HEARTBEATS = Counter("laptime_worker_heartbeats", "Heartbeats written by workers.")


def record_done(*, seconds: float, rows: int) -> None:
    """An ingest that stored its rows and marked the upload done (committed)."""
    INGEST_SECONDS.labels("done").observe(seconds)
    ROWS_STORED.inc(rows)


def record_failed(*, seconds: float, code: str) -> None:
    """An ingest that marked its upload failed with `code` (committed). `code` must come from
    a bounded set (the registered error codes): it becomes a label."""
    INGEST_SECONDS.labels("failed").observe(seconds)
    UPLOADS_FAILED.labels(code).inc()
