"""A `laptime worker` on its own (its own container, no web process sharing its metrics
directory) serves its counts on LAPTIME_WORKER_METRICS_PORT and logs one JSON line per ingest."""

from __future__ import annotations

import json
import signal

import httpx
import psycopg

from tests.conftest import free_port
from tests.factories import junit_xml
from tests.server.conftest import (
    queue_upload,
    scalar,
    sqlalchemy_to_dsn,
    start_worker,
    wait_for,
)
from tests.server.metrics_scrape import Samples, scrape


def _scrape_port(port: int) -> Samples | None:
    try:
        return scrape(f"http://127.0.0.1:{port}")
    except httpx.TransportError:
        return None


def test_a_lone_worker_serves_its_own_metrics(private_db: str) -> None:
    port = free_port()
    upload_id = queue_upload(private_db, junit_xml(5), job="lone")
    failing_id = queue_upload(private_db, b"<testsuites><testsuite>", job="lone")
    worker = start_worker(
        private_db,
        ("LAPTIME_WORKER_METRICS_PORT", str(port)),
        ("LAPTIME_LOG_FORMAT", "json"),
    )
    try:
        wait_for(
            lambda: scalar(private_db, "SELECT count(*) FROM upload WHERE status = 'queued'") == 0,
            60, "both uploads ingested",
        )  # fmt: skip
        ingested = "laptime_ingest_duration_seconds_count"

        def counted() -> bool:
            samples = _scrape_port(port)
            return samples is not None and samples.total(ingested) == 2

        wait_for(counted, 30, "both ingests counted")
        samples = _scrape_port(port)
    finally:
        worker.send_signal(signal.SIGTERM)
        _, stderr = worker.communicate(timeout=30)
    with psycopg.connect(sqlalchemy_to_dsn(private_db)) as conn:
        row = conn.execute("SELECT error_code FROM upload WHERE id = %s", (failing_id,)).fetchone()
    assert row is not None
    code = row[0]
    assert samples is not None
    assert samples.get("laptime_rows_stored_total") == 5
    assert samples.get(ingested, outcome="done") == 1
    assert samples.get("laptime_uploads_failed_total", code=code) == 1
    assert samples.total("laptime_uploads_failed_total") == 1
    lines = [json.loads(line) for line in stderr.decode().splitlines() if line.strip()]
    ingests = {line["upload_id"]: line for line in lines if line.get("event") == "ingest"}
    assert ingests[upload_id]["rows"] == 5
    assert ingests[upload_id]["job"] == "lone"
    assert ingests[failing_id]["outcome"] == "failed"
    assert ingests[failing_id]["error_code"] == code
    assert ingests[failing_id]["rows"] == 0
