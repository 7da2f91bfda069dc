"""/healthz is liveness (no database); /readyz names what keeps the service from working."""

from __future__ import annotations

import threading
import uuid

import httpx
import psycopg

from ingest.worker import WorkerConfig, run_worker
from tests.conftest import LiveServer
from tests.server.conftest import serve_app, sqlalchemy_to_dsn, wait_for


def test_ready_with_a_beating_worker(live_server: LiveServer) -> None:
    def ready() -> bool:
        return httpx.get(f"{live_server.url}/readyz", timeout=10).status_code == 200

    wait_for(ready, 30, "ready")
    body = httpx.get(f"{live_server.url}/readyz", timeout=10).json()
    assert body["status"] == "ready"
    assert body["failing"] == []
    assert set(body["checks"]) == {"database", "migrations", "worker"}
    assert httpx.get(f"{live_server.url}/healthz", timeout=10).json() == {"status": "ok"}


def test_not_ready_names_the_failing_check(private_db: str) -> None:
    with serve_app(private_db, ready_heartbeat_max_age_s=30) as url:
        answer = httpx.get(f"{url}/readyz", timeout=10)
        assert answer.status_code == 503
        assert answer.headers["retry-after"]
        assert answer.json()["failing"] == ["worker"]
        assert "no worker" in answer.json()["checks"]["worker"]["detail"]

        stop = threading.Event()
        name = f"ready-{uuid.uuid4().hex[:6]}"
        config = WorkerConfig(poll_s=0.2, heartbeat_s=0.2, name=name)
        worker = threading.Thread(
            target=run_worker, args=(sqlalchemy_to_dsn(private_db), config, stop)
        )
        worker.start()
        try:
            wait_for(lambda: httpx.get(f"{url}/readyz").status_code == 200, 30, "worker seen")
        finally:
            stop.set()
            worker.join(timeout=15)

        with psycopg.connect(sqlalchemy_to_dsn(private_db), autocommit=True) as conn:
            # A worker silent for longer than the limit, and a schema behind the code.
            conn.execute(
                "INSERT INTO worker_heartbeat (name, host, pid, state, seen_at) "
                "VALUES ('old', 'h', 1, 'idle', clock_timestamp() - interval '1 minute')"
            )
            # One row per head: several while parallel branches' migrations await re-chaining.
            conn.execute("DELETE FROM alembic_version")
            conn.execute("INSERT INTO alembic_version (version_num) VALUES ('0001')")
        body = httpx.get(f"{url}/readyz").json()
        assert body["failing"] == ["migrations", "worker"]
        assert "s ago (limit 30 s)" in body["checks"]["worker"]["detail"]
        assert "laptime migrate" in body["checks"]["migrations"]["detail"]


def test_healthz_answers_without_a_database() -> None:
    # Nothing listens on this socket directory: every database call fails at once.
    url = f"postgresql+psycopg://postgres@/postgres?host=/nonexistent-{uuid.uuid4().hex[:6]}"
    with serve_app(url) as base:
        assert httpx.get(f"{base}/healthz", timeout=10).json() == {"status": "ok"}
        answer = httpx.get(f"{base}/readyz", timeout=10)
        assert answer.status_code == 503
        body = answer.json()
        assert body["failing"] == ["database", "migrations", "worker"]
        assert body["checks"]["database"]["detail"].startswith("database unreachable")
