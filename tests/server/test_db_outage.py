"""Postgres stopped abruptly (immediate mode: every backend killed, crash recovery on start)
under a worker and under uploading clients: nothing acknowledged is lost or stored twice, and
the worker comes back by itself."""

from __future__ import annotations

import signal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field

import httpx
import psycopg
import pytest
from sqlalchemy import Engine

from app.db.engine import make_engine
from ingest.worker import WorkerConfig, run_worker
from tests.conftest import make_project
from tests.factories import junit_xml
from tests.server.conftest import (
    RestartablePostgres,
    queue_upload,
    serve_app,
    start_worker,
    wait_for,
)


@pytest.fixture(scope="module")
def outage_engine(restartable_pg: RestartablePostgres) -> Engine:
    return make_engine(restartable_pg.url)


@pytest.fixture(autouse=True)
def _server_up_after(restartable_pg: RestartablePostgres) -> Iterator[None]:
    """Whatever a test did to the server, the next one finds it running."""
    yield
    restartable_pg.ensure_running()


def _status(dsn: str, upload_id: int) -> str | None:
    try:
        with psycopg.connect(dsn, connect_timeout=2) as conn:
            row = conn.execute("SELECT status FROM upload WHERE id = %s", (upload_id,)).fetchone()
    except psycopg.OperationalError:
        return None
    return None if row is None else str(row[0])


def test_worker_reconnects_after_a_crash_restart(
    restartable_pg: RestartablePostgres, outage_engine: Engine
) -> None:
    stop = threading.Event()
    config = WorkerConfig(poll_s=0.2, heartbeat_s=0.2, name=f"reconnect-{uuid.uuid4().hex[:6]}")
    thread = threading.Thread(target=run_worker, args=(restartable_pg.dsn, config, stop))
    thread.start()
    try:
        first = queue_upload(restartable_pg.url, junit_xml(20, seed=1), job="before")
        wait_for(lambda: _status(restartable_pg.dsn, first) == "done", what="first upload done")
        restartable_pg.crash()
        outage_engine.dispose()
        # The worker is now failing to reconnect; it must still be running afterwards.
        restartable_pg.start()
        assert thread.is_alive()
        second = queue_upload(restartable_pg.url, junit_xml(20, seed=2), job="after")
        wait_for(lambda: _status(restartable_pg.dsn, second) == "done", what="after restart")
        with psycopg.connect(restartable_pg.dsn) as conn:
            beat = conn.execute(
                "SELECT state FROM worker_heartbeat WHERE name = %s", (config.name,)
            ).fetchone()
            attempts = conn.execute(
                "SELECT count(*) FROM upload_attempt WHERE upload_id = %s", (second,)
            ).fetchone()
        assert beat is not None
        assert attempts == (1,)
    finally:
        stop.set()
        thread.join(timeout=15)
    assert not thread.is_alive()


def _beats(dsn: str) -> int:
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT count(*) FROM worker_heartbeat").fetchone()
    return 0 if row is None else int(row[0])


@dataclass
class _Client:
    """One CI job uploading distinct reports; remembers what it was told."""

    acked: dict[int, int] = field(default_factory=dict)  # upload id -> tests in the report
    refused: int = 0  # non-2xx answers and transport errors: "not acknowledged"
    refusal_codes: set[int | None] = field(default_factory=set)  # None: no answer


def _upload_loop(url: str, token: str, client: _Client, seed: int, enough: threading.Event) -> None:
    with httpx.Client(base_url=url, timeout=10) as http:
        for i in range(400):  # bound; the test ends the loop with `enough` far earlier
            if enough.is_set():
                return
            tests = 3 + (seed * 7 + i) % 5
            body = junit_xml(tests, seed=seed * 1000 + i, prefix=f"t/c{seed}_{i}_")
            try:
                answer = http.post(
                    "/api/v1/uploads",
                    headers={"Authorization": f"Bearer {token}"},
                    files={"file": ("r.xml", body)},
                    data={"job": f"client{seed}-{i}"},
                )
            except httpx.TransportError:
                client.refused += 1
                client.refusal_codes.add(None)
                continue
            if 200 <= answer.status_code < 300:
                client.acked[int(answer.json()["id"])] = tests
            else:
                client.refused += 1
                client.refusal_codes.add(answer.status_code)


def test_postgres_crash_while_8_clients_upload(
    restartable_pg: RestartablePostgres, outage_engine: Engine
) -> None:
    project = make_project(outage_engine)
    with serve_app(restartable_pg.url) as base_url:
        worker = start_worker(restartable_pg.url, ("LAPTIME_WORKER_HEARTBEAT_S", "0.5"))
        clients = [_Client() for _ in range(8)]
        enough = threading.Event()
        threads = [
            threading.Thread(
                target=_upload_loop,
                args=(base_url, project.upload_token, c, seed, enough),
            )
            for seed, c in enumerate(clients)
        ]

        def acked_count() -> int:
            return sum(len(c.acked) for c in clients)

        try:
            wait_for(lambda: _beats(restartable_pg.dsn) > 0, 60, "the worker's first heartbeat")
            for t in threads:
                t.start()
            wait_for(lambda: acked_count() >= 16, 60, "uploads before the crash")
            restartable_pg.crash()
            # Down until every client has been refused once, then back.
            wait_for(lambda: all(c.refused for c in clients), 30, "every client refused")
            before_restart = acked_count()
            restartable_pg.start()
            wait_for(lambda: acked_count() >= before_restart + 16, 60, "uploads after the restart")
            enough.set()
            for t in threads:
                t.join(timeout=30)
            assert not any(t.is_alive() for t in threads)
            acked = {k: v for c in clients for k, v in c.acked.items()}
            assert len(acked) >= 16
            assert sum(c.refused for c in clients) >= 1  # the crash was seen by clients

            def stored_statuses() -> dict[int, str] | None:
                try:
                    with psycopg.connect(restartable_pg.dsn, connect_timeout=2) as conn:
                        rows = conn.execute(
                            "SELECT id, status FROM upload WHERE id = ANY(%s)", (list(acked),)
                        ).fetchall()
                except psycopg.OperationalError:
                    return None
                return {int(i): str(status) for i, status in rows}

            def all_stored_done() -> bool:
                found = stored_statuses()
                return found is not None and set(found.values()) == {"done"}

            wait_for(all_stored_done, 120, "every stored upload ingested")
            # The worker came back by itself: the same process, never restarted.
            assert worker.poll() is None, worker.stderr.read().decode()[-3000:]  # type: ignore[union-attr]
            with psycopg.connect(restartable_pg.dsn) as conn:
                stored = dict(
                    conn.execute(
                        "SELECT u.id, (SELECT count(*) FROM test_result r "
                        "WHERE r.run_id = u.run_id) FROM upload u WHERE u.id = ANY(%s)",
                        (list(acked),),
                    ).fetchall()
                )
                runs = dict(
                    conn.execute(
                        "SELECT upload_id, count(*) FROM run WHERE upload_id = ANY(%s) "
                        "GROUP BY upload_id",
                        (list(acked),),
                    ).fetchall()
                )
            # Stored exactly once, with all of its tests.
            assert runs == dict.fromkeys(stored, 1)
            assert stored == {k: acked[k] for k in stored}
            # Nothing acknowledged was lost (the API commits before it answers 2xx).
            assert sorted(set(acked) - set(stored)) == []
            # Refusals said "retry later", never "bug": 503 (or no answer at all).
            assert {code for c in clients for code in c.refusal_codes} <= {503, None}
        finally:
            enough.set()
            worker.send_signal(signal.SIGTERM)
            worker.wait(timeout=20)


def test_worker_started_while_the_database_is_down_waits_for_it(
    restartable_pg: RestartablePostgres,
) -> None:
    restartable_pg.crash()
    worker = start_worker(restartable_pg.url)
    try:
        assert worker.stderr is not None
        said = worker.stderr.readline().decode()  # blocks until its first complaint
        assert "database unavailable" in said
        assert worker.poll() is None
        restartable_pg.start()
        upload = queue_upload(restartable_pg.url, junit_xml(10, seed=9), job="late")
        wait_for(lambda: _status(restartable_pg.dsn, upload) == "done", what="ingested")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=20)
