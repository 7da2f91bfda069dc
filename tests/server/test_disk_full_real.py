"""A real full disk: the database's tablespace on a small tmpfs that the test fills. Episode
after episode of DiskFull (53100), the upload waits without spending an attempt or leaving a
DiskFull attempt on record; once space is freed it finishes with its one attempt
(docs/errors.md: the moment's errors spend no attempt)."""

from __future__ import annotations

import errno
import os
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from app.db.engine import migrate
from ingest.worker import WorkerConfig, drain, run_worker
from tests.conftest import Database
from tests.factories import junit_xml
from tests.server.conftest import queue_upload, scalar, sqlalchemy_to_dsn, wait_for
from tests.server.test_worker_faults import _status

DISK_BYTES = 24 * 1024 * 1024
# More episodes than the old free retries of a shortage (10): each is one claim, rolled back.
EPISODES = 14


def _write_until_refused(fd: int, size: int) -> int | None:
    """Write blocks of `size` bytes until the kernel refuses one; the errno it gave."""
    try:
        while True:
            os.write(fd, b"\0" * size)
    except OSError as exc:
        return exc.errno


def _fill(path: Path) -> None:
    """Write `path` until the filesystem has no byte left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 16, 1 << 12, 1):  # whole blocks, then the last partial ones
            assert _write_until_refused(fd, size) == errno.ENOSPC
    finally:
        os.close(fd)


@pytest.fixture
def small_disk_db(database: Database) -> Iterator[tuple[str, Path]]:
    """(SQLAlchemy URL of a migrated database whose tablespace is a 24 MiB tmpfs, its mount)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount = Path(tempfile.mkdtemp(prefix="laptime-small-disk-"))
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_BYTES},mode=0700", "tmpfs", str(mount)],
        check=True,
    )
    name = f"w_{uuid.uuid4().hex[:10]}"
    try:
        # The embedded server runs as its own user when the tests run as root: the
        # tablespace directory must be its.
        with psycopg.connect(database.dsn, autocommit=True) as conn:
            row = conn.execute("SHOW data_directory").fetchone()
            assert row is not None
            owner = Path(row[0]).stat()
            os.chown(mount, owner.st_uid, owner.st_gid)
            conn.execute(f"CREATE TABLESPACE {name} LOCATION '{mount}'")
            conn.execute(f"CREATE DATABASE {name} TABLESPACE {name}")
        url = database.url.replace("/postgres?", f"/{name}?")
        migrate(url)
        yield url, mount
    finally:
        with psycopg.connect(database.dsn, autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                (name,),
            )
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            conn.execute(f"DROP TABLESPACE IF EXISTS {name}")
        subprocess.run(["umount", "--lazy", str(mount)], check=False)
        mount.rmdir()


def test_disk_full_episodes_spend_no_attempt(small_disk_db: tuple[str, Path]) -> None:
    url, mount = small_disk_db
    dsn = sqlalchemy_to_dsn(url)
    # A first upload ingested while there is room: the tables have pages with free space, so
    # small writes (a claim's attempt row) still fit when the disk is full, as in production.
    first = queue_upload(url, junit_xml(5, seed=4), job="first")
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        drain(conn, side, WorkerConfig())
    assert _status(url, first).status == "done"
    upload_id = queue_upload(url, junit_xml(3000, seed=5), job="full")
    filler = mount / "filler"
    _fill(filler)
    claims_before = scalar(url, "SELECT count(*) FROM upload_attempt")
    stop = threading.Event()
    config = WorkerConfig(
        poll_s=0.2, heartbeat_s=0.2, backoff_first_s=0.01, backoff_cap_s=0.05,
        name=f"full-{uuid.uuid4().hex[:6]}",
    )  # fmt: skip
    worker = threading.Thread(target=run_worker, args=(dsn, config, stop))
    worker.start()
    try:
        # Each claim takes the next id of the attempt sequence, even when it is rolled back.
        def claims() -> int:
            # A new backend may fail to start while the disk is full (its relcache init
            # file): that probe counts nothing and the wait asks again.
            try:
                with psycopg.connect(dsn) as conn:
                    row = conn.execute("SELECT last_value FROM upload_attempt_id_seq").fetchone()
            except psycopg.OperationalError:
                return -1
            assert row is not None
            return int(row[0])

        wait_for(lambda: claims() >= claims_before + EPISODES, what=f"{EPISODES} disk-full tries")
        doc = _status(url, upload_id)
        assert (doc.status, doc.attempts) == ("queued", 0), doc
        assert scalar(url, "SELECT count(*) FROM upload_attempt WHERE error IS NOT NULL") == 0
        assert scalar(url, "SELECT count(*) FROM test_result") == 5  # nothing stored yet
        filler.unlink()  # the operator frees space
        wait_for(lambda: _status(url, upload_id).status == "done", what="the upload done")
    finally:
        stop.set()
        worker.join(timeout=30)
    doc = _status(url, upload_id)
    assert (doc.status, doc.attempts, doc.error_code) == ("done", 1, None), doc
    assert scalar(url, "SELECT attempts FROM upload WHERE id = %s", upload_id) == 1
    assert scalar(url, "SELECT count(*) FROM upload_attempt WHERE error IS NOT NULL") == 0
    assert scalar(url, "SELECT count(*) FROM upload_attempt WHERE upload_id = %s", upload_id) == 1
    assert scalar(url, "SELECT count(*) FROM test_result") == 3005
