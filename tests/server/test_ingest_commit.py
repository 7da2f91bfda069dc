"""The worker's ingest and attempt connections commit without waiting for the WAL flush.

Exactly-once holds: the claim, the rows, the rollups and the upload's `done` mark are one
transaction, so a database crash before the flush loses all of them together, and the upload,
committed synchronously by the API, is still queued and ingested again. The attempt rows need
to outlive a killed worker, which any commit gives, not a database crash, which spends no
attempt anyway (ingest/attempts.py).
"""

from __future__ import annotations

from ingest.worker import ingest_connection, side_connection
from tests.conftest import Database


def test_worker_connections_commit_without_waiting_for_the_flush(
    database: Database,
) -> None:
    with (
        ingest_connection(database.dsn, "commit-test") as conn,
        side_connection(database.dsn, "commit-test") as side,
    ):
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
        assert side.execute("SHOW synchronous_commit").fetchone() == ("off",)
        assert not conn.autocommit
        assert side.autocommit
        name = conn.execute("SHOW application_name").fetchone()
        assert name == ("laptime-worker commit-test",)
