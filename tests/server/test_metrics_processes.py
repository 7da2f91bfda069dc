"""Several processes, one /metrics: `laptime serve --workers 2` (two web processes and an
ingest worker child sharing PROMETHEUS_MULTIPROC_DIR) answers the same counts whichever
process serves the scrape, and its JSON log carries one parseable line per request and per
ingest, with no token anywhere in it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.db.engine import make_engine
from tests.conftest import free_port, make_project
from tests.factories import junit_xml
from tests.server.conftest import wait_for
from tests.server.metrics_scrape import scrape

LAPTIME = [sys.executable, "-c", "from app.cli.main import main; main()"]
ROWS = 9


def _start(url: str, port: int, log: Path, shared: Path) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAPTIME_")}
    env.update(
        {
            "DATABASE_URL": url,
            "PROMETHEUS_MULTIPROC_DIR": str(shared),
            "LAPTIME_LOG_FORMAT": "json",
            "LAPTIME_WORKER_POLL_S": "0.2",
        }
    )
    with log.open("wb") as sink:
        return subprocess.Popen(
            [*LAPTIME, "serve", "--port", str(port), "--workers", "2"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=sink,
        )


def _up_or_dead(url: str, proc: subprocess.Popen[bytes]) -> bool:
    if proc.poll() is not None:
        return True
    try:
        return httpx.get(f"{url}/healthz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def server(private_db: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`laptime serve --workers 2` with its worker child on its own database; its URL and log."""
    shared = tmp_path / "metrics"
    log = tmp_path / "serve.log"
    url = f"http://127.0.0.1:{free_port()}"
    proc = _start(private_db, int(url.rsplit(":", 1)[1]), log, shared)
    try:
        wait_for(partial(_up_or_dead, url, proc), 90, f"{url} up: {log}")
        assert proc.poll() is None, log.read_text()
        yield url, log
    finally:
        _stop(proc)


def _json_lines(path: Path) -> list[dict[str, Any]]:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line is JSON, or this raises


def test_two_web_processes_and_a_worker_child_share_one_set_of_counts(
    private_db: str, server: tuple[str, Path]
) -> None:
    url, log = server
    engine = make_engine(private_db, pool_size=1)
    try:
        project = make_project(engine)
    finally:
        engine.dispose()
    token = project.upload_token
    # The token also in a form field and the query string: neither may reach a log line.
    sent = httpx.post(
        f"{url}/api/v1/uploads",
        params={"token": token},
        headers={"Authorization": f"Bearer {token}", "X-Request-ID": "obs-req-1"},
        files=[("file", ("r.xml", junit_xml(ROWS)))],
        data={"job": "observed", "token": token},
        timeout=60,
    )
    assert sent.status_code == 202, sent.text
    assert sent.headers["x-request-id"] == "obs-req-1"
    wrong = "lt_never-valid-token-0123456789"
    refused = httpx.post(
        f"{url}/api/v1/uploads",
        headers={"Authorization": f"Bearer {wrong}"},
        files=[("file", ("r.xml", b"x"))],
    )
    assert refused.status_code == 401
    upload_id = sent.json()["id"]

    def ingested() -> bool:
        doc = httpx.get(
            f"{url}/api/v1/uploads/{upload_id}", headers={"Authorization": f"Bearer {token}"}
        ).json()
        assert doc["status"] != "failed", doc
        return bool(doc["status"] == "done")

    wait_for(ingested, 60, "the worker child ingested the upload")
    # The worker counts right after its commit: poll until that reached the shared directory.
    wait_for(
        lambda: scrape(url).get("laptime_ingest_duration_seconds_count", outcome="done") == 1,
        30, "the ingest counted",
    )  # fmt: skip
    # /healthz answered as soon as one web process was up; on a loaded machine the other may
    # still be starting (its pool is counted once its app is built).
    wait_for(
        lambda: scrape(url).get("laptime_db_pool_capacity") == 2 * 15,
        60, "both web processes up",
    )  # fmt: skip
    # Each scrape is answered by one of the two processes; every one sums all three.
    for _ in range(6):
        metrics = scrape(url)
        assert metrics.get("laptime_uploads_received_total") == 2
        assert metrics.get("laptime_uploads_accepted_total") == 1
        assert metrics.get("laptime_uploads_refused_total", code="token-invalid") == 1
        assert metrics.get("laptime_rows_stored_total") == ROWS
        assert metrics.get("laptime_ingest_duration_seconds_count", outcome="done") == 1
        assert metrics.get("laptime_worker_heartbeats_total") >= 1
        post = {"method": "POST", "route": "/api/v1/uploads"}
        count = "laptime_http_request_duration_seconds_count"
        assert metrics.get(count, status="202", **post) == 1
        assert metrics.get(count, status="401", **post) == 1
        assert metrics.get("laptime_db_pool_capacity") == 2 * 15  # two live web processes
    # Two web processes wrote request lines (the worker child, the ingest line).
    pids = {line["pid"] for line in _json_lines(log) if line.get("event") == "request"}
    assert len(pids) >= 1

    _check_logs([log], token, wrong, upload_id, project.slug)


def _check_logs(logs: list[Path], token: str, wrong: str, upload_id: int, slug: str) -> None:
    """One line per request and per ingest, every line JSON, no token anywhere."""
    text = "".join(log.read_text() for log in logs)
    assert token not in text
    assert wrong not in text
    lines = [line for log in logs for line in _json_lines(log)]
    requests = [line for line in lines if line.get("event") == "request"]
    (upload_line,) = [line for line in requests if line.get("request_id") == "obs-req-1"]
    assert upload_line["method"] == "POST"
    assert upload_line["route"] == "/api/v1/uploads"
    assert upload_line["status"] == 202
    assert 0 < upload_line["seconds"] < 60
    assert {"time", "level", "logger", "message", "client"} <= set(upload_line)
    assert all(line["request_id"] for line in requests)
    (ingest,) = [line for line in lines if line.get("event") == "ingest"]
    assert ingest["upload_id"] == upload_id
    assert ingest["project"] == slug
    assert ingest["job"] == "observed"
    assert ingest["rows"] == ROWS
    assert ingest["outcome"] == "done"
    assert 0 < ingest["seconds"] < 60
