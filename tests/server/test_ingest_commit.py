"""The worker's ingest connection commits without waiting for the WAL flush; its side
connections (attempts) wait as before.

Why that keeps exactly-once: the claim, the rows, the rollups and the upload's `done` mark
are one transaction, so a database crash before the flush loses all of them together and the
upload, committed synchronously by the API, is still queued and ingested again.
"""

from __future__ import annotations

from ingest.worker import ingest_connection, side_connection
from tests.conftest import Database


def test_ingest_connection_commits_asynchronously_side_connection_does_not(
    database: Database,
) -> None:
    with (
        ingest_connection(database.dsn, "commit-test") as conn,
        side_connection(database.dsn, "commit-test") as side,
    ):
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
        assert side.execute("SHOW synchronous_commit").fetchone() == ("on",)
        assert not conn.autocommit
        assert side.autocommit
        name = conn.execute("SHOW application_name").fetchone()
        assert name == ("laptime-worker commit-test",)
