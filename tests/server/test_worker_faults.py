"""Database errors during an ingest: the moment's errors wait and spend no attempt, the
report's own faults fail it at once, anything else fails it after max_attempts, and the
attempts GET /api/v1/uploads/{id} shows agree with the error detail."""

from __future__ import annotations

import threading
import uuid

import psycopg
import pytest
from sqlalchemy import create_engine

from app.db.uploads import UploadStatus, get_upload
from app.settings import Settings
from ingest.worker import WorkerConfig, drain, run_worker
from tests.factories import junit_xml
from tests.server.conftest import queue_upload, scalar, sqlalchemy_to_dsn, wait_for
from tests.server.faults import fail_run_inserts, fault_tries


def _status(url: str, upload_id: int) -> UploadStatus:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            doc = get_upload(conn, upload_id, lease_s=Settings().worker_lease_s)
    finally:
        engine.dispose()
    assert doc is not None
    return doc


def _drain(url: str, config: WorkerConfig) -> None:
    dsn = sqlalchemy_to_dsn(url)
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        drain(conn, side, config)


def test_disk_full_waits_and_succeeds_without_spending_attempts(private_db: str) -> None:
    # A full disk fails the first 8 tries, more than max_attempts (3) times per upload.
    fail_run_inserts(sqlalchemy_to_dsn(private_db), "53100", times=8)
    uploads = [queue_upload(private_db, junit_xml(40, seed=s), job=f"j{s}") for s in range(3)]
    stop = threading.Event()
    config = WorkerConfig(
        poll_s=0.2, heartbeat_s=0.2, backoff_first_s=0.02, backoff_cap_s=0.2,
        name=f"diskfull-{uuid.uuid4().hex[:6]}",
    )  # fmt: skip
    worker = threading.Thread(target=run_worker, args=(sqlalchemy_to_dsn(private_db), config, stop))
    worker.start()
    try:
        wait_for(
            lambda: scalar(private_db, "SELECT count(*) FROM upload WHERE status = 'done'") == 3,
            what="every upload done once the disk has room",
        )
    finally:
        stop.set()
        worker.join(timeout=15)
    assert fault_tries(sqlalchemy_to_dsn(private_db)) >= 9  # the fault did fire 8 times
    for upload_id in uploads:
        doc = _status(private_db, upload_id)
        assert (doc.status, doc.attempts, doc.error_code) == ("done", 1, None)
    assert scalar(private_db, "SELECT count(*) FROM run") == 3


@pytest.mark.parametrize(
    ("sqlstate", "what"),
    [("40001", "serialization failure"), ("40P01", "deadlock"), ("57P01", "admin shutdown"),
     ("53200", "out of memory")],
)  # fmt: skip
def test_transient_errors_give_their_attempt_back(private_db: str, sqlstate: str, what: str):
    fail_run_inserts(sqlalchemy_to_dsn(private_db), sqlstate, times=1)
    upload_id = queue_upload(private_db, junit_xml(5), job=what)
    from ingest.worker import TransientFailure

    with pytest.raises(TransientFailure, match=sqlstate):
        _drain(private_db, WorkerConfig())
    doc = _status(private_db, upload_id)
    assert (doc.status, doc.attempts) == ("queued", 0)
    _drain(private_db, WorkerConfig())
    assert _status(private_db, upload_id).status == "done"


def test_data_the_database_refuses_fails_at_once(private_db: str) -> None:
    fail_run_inserts(sqlalchemy_to_dsn(private_db), "22023", times=100)
    upload_id = queue_upload(private_db, junit_xml(5), job="refused")
    _drain(private_db, WorkerConfig())
    doc = _status(private_db, upload_id)
    assert (doc.status, doc.error_code, doc.attempts) == ("failed", "store-rejected", 1)
    assert "22023" in doc.error_detail
    assert fault_tries(sqlalchemy_to_dsn(private_db)) == 1


def test_give_up_detail_and_attempts_agree(private_db: str) -> None:
    # P0001 (raise_exception): neither transient nor the data's fault, like a bug of ours.
    fail_run_inserts(sqlalchemy_to_dsn(private_db), "P0001", times=100)
    upload_id = queue_upload(private_db, junit_xml(5), job="poison")
    _drain(private_db, WorkerConfig(max_attempts=3))
    doc = _status(private_db, upload_id)
    assert (doc.status, doc.error_code) == ("failed", "ingest-gave-up")
    assert doc.error_detail.startswith("gave up after 3 attempts; last error: RaiseException")
    assert doc.attempts == 3
    assert scalar(private_db, "SELECT attempts FROM upload WHERE id = %s", upload_id) == 3
    assert fault_tries(sqlalchemy_to_dsn(private_db)) == 3


def test_finished_at_is_when_the_ingest_ended(private_db: str) -> None:
    upload_id = queue_upload(private_db, junit_xml(20), job="clock")
    dsn = sqlalchemy_to_dsn(private_db)
    from ingest.worker import process_next

    with (
        psycopg.connect(dsn) as conn,
        psycopg.connect(dsn, autocommit=True) as side,
        conn.transaction(),
    ):
        # now() is the start of the transaction; a server-side pause before the worker's
        # statements makes finished_at = now() detectably wrong (not a wait for anything).
        conn.execute("SELECT pg_sleep(0.3)")
        assert process_next(conn, side, WorkerConfig()) == upload_id
        started = conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]
    finished = scalar(
        private_db,
        "SELECT (extract(epoch FROM finished_at) * 1000)::bigint FROM upload WHERE id = %s",
        upload_id,
    )
    assert finished - int(started.timestamp() * 1000) >= 300


def test_a_shortage_one_upload_keeps_causing_holds_no_queue_and_spends_nothing(
    private_db: str,
) -> None:
    # Disk full on every try of one upload (as a report too big for the disk would): it is
    # claimed after the others, so the upload queued behind it is ingested, and it stays
    # queued, with no attempt spent, until the disk has room.
    with psycopg.connect(sqlalchemy_to_dsn(private_db), autocommit=True) as conn:
        conn.execute(
            """
            CREATE SEQUENCE poison_tries;
            CREATE FUNCTION fault_poison() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.job = 'poison' THEN
                    PERFORM nextval('poison_tries');
                    RAISE EXCEPTION 'injected disk full' USING ERRCODE = '53100';
                END IF;
                RETURN NEW;
            END $$;
            CREATE TRIGGER fault_poison BEFORE INSERT ON run
                FOR EACH ROW EXECUTE FUNCTION fault_poison();
            """
        )
    poison = queue_upload(private_db, junit_xml(5, seed=1), job="poison")
    healthy = queue_upload(private_db, junit_xml(5, seed=2), job="healthy")
    stop = threading.Event()
    config = WorkerConfig(
        poll_s=0.2, heartbeat_s=0.2, backoff_first_s=0.01, backoff_cap_s=0.05,
        name=f"poison-{uuid.uuid4().hex[:6]}",
    )  # fmt: skip
    worker = threading.Thread(target=run_worker, args=(sqlalchemy_to_dsn(private_db), config, stop))
    worker.start()
    try:
        wait_for(
            lambda: _status(private_db, healthy).status == "done",
            what="the healthy upload done behind the poison one",
        )
        wait_for(
            lambda: scalar(private_db, "SELECT last_value FROM poison_tries") > 12,
            what="a dozen tries of the poison upload",
        )
    finally:
        stop.set()
        worker.join(timeout=15)
    # Read once the worker has stopped: mid-try the upload is `processing`, its claim under way.
    queued = _status(private_db, poison)
    assert (queued.status, queued.attempts, queued.error_code) == ("queued", 0, None)
    assert scalar(private_db, "SELECT count(*) FROM upload_attempt WHERE error IS NOT NULL") == 0


def test_processing_only_while_a_live_worker_holds_the_claim(private_db: str) -> None:
    upload_id = queue_upload(private_db, junit_xml(3), job="claimed")
    with psycopg.connect(sqlalchemy_to_dsn(private_db), autocommit=True) as conn:
        # A worker claimed it and died: its attempt stays, nobody is ingesting it.
        conn.execute(
            "INSERT INTO upload_attempt (upload_id, worker) VALUES (%s, 'gone:1')", (upload_id,)
        )
        doc = _status(private_db, upload_id)
        assert (doc.status, doc.attempts) == ("queued", 1)
        conn.execute(
            "INSERT INTO worker_heartbeat (name, host, pid, state, upload_id, seen_at) "
            "VALUES ('gone:1', 'h', 1, 'ingesting', %s, clock_timestamp() - interval '1 hour')",
            (upload_id,),
        )
        assert _status(private_db, upload_id).status == "queued"  # its heartbeat is stale
        conn.execute("UPDATE worker_heartbeat SET seen_at = clock_timestamp()")
        assert _status(private_db, upload_id).status == "processing"
