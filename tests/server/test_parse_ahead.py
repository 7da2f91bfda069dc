"""Parse-ahead (ingest/parse_ahead.py): while a batch is stored, a process of the worker
parses the uploads the next claim takes. The rows stored equal those of a worker without it;
a report that fails to parse fails as it would without it; uploads another worker took are not
used; a lost connection or a killed process costs one round; uploads over its memory bound are
left to their claim."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import psycopg

from ingest.parse_ahead import APPLICATION, ParseAhead
from ingest.store import KnownTests
from ingest.worker import WorkerConfig, drain, ingest_connection, side_connection
from tests.conftest import Database
from tests.server.conftest import make_private_db, sqlalchemy_to_dsn, start_worker, wait_for
from tests.server.test_ingest_batch import (
    BATCH,
    STORED,
    assert_rollups_equal_recomputation,
    junit_report,
    laptime_report,
    new_project,
    queue,
    rows,
)

BAD = b'{"format": "laptime-json", "version": 1, "tests": [{"nodeid": 5}]}'
BATCH_UPLOADS = 8
WORKER = "ahead-test"


def uploads(
    count: int, *, bad_at: int | None = None, start: int = 0
) -> tuple[tuple[str, str, bytes], ...]:
    """`count` uploads of several jobs, days and formats; a malformed one at `bad_at`."""
    made = []
    for i in range(start, start + count):
        job, started_at, _ = BATCH[i % len(BATCH)]
        body = (
            BAD
            if i == bad_at
            else junit_report(range(i % 5, 6 + i % 5), speed=1 + i % 3)
            if i % 4 == 3
            else laptime_report(range(i % 9, 12 + i % 9), speed=1 + i % 4)
        )
        made.append((job, started_at, body))
    return tuple(made)


def worker(url: str, ahead: ParseAhead | None) -> int:
    """Drain the queue as a worker with batches; how many uploads it processed."""
    dsn = sqlalchemy_to_dsn(url)
    config = WorkerConfig(name=WORKER, batch_uploads=BATCH_UPLOADS)
    with ingest_connection(dsn, WORKER) as conn, side_connection(dsn, WORKER) as side:
        return drain(conn, side, config, known_tests=KnownTests(), parse_ahead=ahead)


def parse_ahead(url: str, **options: Any) -> ParseAhead:
    return ParseAhead(sqlalchemy_to_dsn(url), WORKER, uploads=BATCH_UPLOADS, limits=None, **options)


def queued(database: Database, slug: str, count: int) -> tuple[str, list[int]]:
    """A private database with a project `slug` and `count` uploads queued: (url, ids)."""
    url = make_private_db(database)
    new_project(url, slug)
    return url, queue(url, slug, uploads(count))


def taken_in_rounds(ahead: ParseAhead, ids: list[int], rounds: int) -> list[list[int]]:
    """What each of `rounds` rounds in a row parsed of `ids`."""
    taken = []
    for _ in range(rounds):
        begin(ahead)
        taken.append(sorted(ahead.take(ids)))
    return taken


def begin(ahead: ParseAhead) -> None:
    """A round, as the worker starts one after its batch's parse (on its connection)."""
    with psycopg.connect(ahead.dsn) as conn:
        ahead.start(conn, exclude=[])


def up(ahead: ParseAhead) -> None:
    """Its process is up (a first round, forgotten): the worker's first round is not late."""
    begin(ahead)
    ahead.take([])
    assert ahead.process_id is not None


def parse_ahead_backends(url: str) -> list[int]:
    return [
        pid
        for (pid,) in rows(
            url, "SELECT pid FROM pg_stat_activity WHERE application_name = %s", APPLICATION
        )
    ]


def stored_once(url: str, ids: list[int]) -> None:
    runs = rows(url, "SELECT upload_id, count(*) FROM run GROUP BY 1 ORDER BY 1")
    assert all(count == 1 for _, count in runs)
    done = rows(url, "SELECT id FROM upload WHERE status = 'done' ORDER BY id")
    assert [upload for upload, _ in runs] == [upload for (upload,) in done]
    assert rows(url, "SELECT count(*) FROM upload WHERE status = 'queued'") == [(0,)]
    assert len(done) >= len(ids) - 1


def test_the_next_batches_are_parsed_ahead_and_stored_as_without_it(database: Database) -> None:
    plain, ahead_db = make_private_db(database), make_private_db(database)
    batch = uploads(3 * BATCH_UPLOADS, bad_at=BATCH_UPLOADS + 2)
    for url in (plain, ahead_db):
        assert new_project(url, "ahead") == 1
    ids = {url: queue(url, "ahead", batch) for url in (plain, ahead_db)}
    assert ids[plain] == ids[ahead_db]

    assert worker(plain, None) == len(batch)
    ahead = parse_ahead(ahead_db)
    with ahead:
        up(ahead)
        assert worker(ahead_db, ahead) == len(batch)

    # The first batch is parsed after its claim, the next ones ahead (the second only if its
    # round read the queue before the first batch's commit), but for the bad report, which
    # its claim parses again and fails as without parse-ahead.
    assert ahead.used in (BATCH_UPLOADS, 2 * BATCH_UPLOADS - 1)
    for what, sql in STORED.items():
        expected = rows(plain, sql)
        assert len(expected) >= 3, what
        assert rows(ahead_db, sql) == expected, what
    failed = rows(ahead_db, "SELECT id, error_code FROM upload WHERE status = 'failed'")
    assert [upload for upload, _ in failed] == [ids[ahead_db][BATCH_UPLOADS + 2]]
    assert failed[0][1] is not None
    stored_once(ahead_db, ids[ahead_db])
    assert_rollups_equal_recomputation(ahead_db)


def test_uploads_another_worker_took_are_not_used(database: Database) -> None:
    url, ids = queued(database, "taken", 2 * BATCH_UPLOADS)
    ahead = parse_ahead(url)
    with ahead:
        up(ahead)
        begin(ahead)
        # The round parsed the first batch; another worker claimed it, this one the next.
        assert ahead.take(ids[BATCH_UPLOADS:]) == {}
        assert (ahead.parsed, ahead.used) == (2 * BATCH_UPLOADS, 0)
        assert worker(url, None) == len(ids)
        # Nothing is left of the round: the next finds no queued upload.
        begin(ahead)
        assert ahead.take(ids) == {}
    stored_once(url, ids)


def test_a_lost_connection_costs_one_round(database: Database) -> None:
    url, ids = queued(database, "lost", 2 * BATCH_UPLOADS)
    first = ids[:BATCH_UPLOADS]
    ahead = parse_ahead(url)
    with ahead:
        up(ahead)
        [lost] = parse_ahead_backends(url)
        with psycopg.connect(sqlalchemy_to_dsn(url), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (lost,))
        rounds = taken_in_rounds(ahead, first, 2)
        # The round that found its connection lost parsed nothing; the next reconnected.
        assert rounds == [[], first]
        assert len(parse_ahead_backends(url)) == 1
        assert parse_ahead_backends(url) != [lost]
        assert worker(url, ahead) == len(ids)
    stored_once(url, ids)
    assert_rollups_equal_recomputation(url)


def test_a_parse_ahead_process_that_dies_costs_one_round(database: Database) -> None:
    url, ids = queued(database, "died", 2 * BATCH_UPLOADS)
    first = ids[:BATCH_UPLOADS]
    ahead = parse_ahead(url)
    with ahead:
        up(ahead)
        child = ahead.process_id
        assert child is not None
        os.kill(child, signal.SIGKILL)
        rounds = taken_in_rounds(ahead, first, 3)
        # The pool that lost its process is dropped (at the start or the take of a round);
        # a new process parses the next round.
        assert rounds in ([[], first, first], [[], [], first])
        assert ahead.process_id not in (None, child)
        assert worker(url, ahead) == len(ids)
    stored_once(url, ids)


def test_uploads_over_its_memory_bound_are_left_to_their_claim(database: Database) -> None:
    url, ids = queued(database, "big", 2 * BATCH_UPLOADS)
    smallest = rows(url, "SELECT min(octet_length(raw_gzip)) FROM upload_file")[0][0]
    ahead = parse_ahead(url, max_bytes=smallest - 1)
    with ahead:
        assert worker(url, ahead) == len(ids)
    assert (ahead.parsed, ahead.used) == (0, 0)
    stored_once(url, ids)


def test_no_round_parses_while_another_worker_is_connected(database: Database) -> None:
    url, ids = queued(database, "busy", BATCH_UPLOADS)
    ahead = parse_ahead(url)
    with ahead:
        up(ahead)
        # Every worker would parse the same next uploads and one would claim them.
        with side_connection(sqlalchemy_to_dsn(url), "another-worker"):
            begin(ahead)
            assert ahead.take(ids) == {}
        begin(ahead)
        assert sorted(ahead.take(ids)) == ids


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # The fields after the command's closing parenthesis: state, then the parent.
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def test_the_process_ends_with_a_worker_killed_outright(database: Database) -> None:
    url, _ = queued(database, "orphan", 3 * BATCH_UPLOADS)
    proc = start_worker(url)  # the default settings: batches of 8 with parse-ahead
    try:
        wait_for(lambda: parse_ahead_backends(url), what="the parse-ahead process connected")
        wait_for(
            lambda: rows(url, "SELECT count(*) FROM upload WHERE status = 'queued'") == [(0,)],
            what="the uploads ingested",
        )
        kids = children(proc.pid)
        assert kids
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    wait_for(lambda: not any(Path(f"/proc/{kid}").exists() for kid in kids),
             what="the parse-ahead process ended")  # fmt: skip
    wait_for(lambda: not parse_ahead_backends(url), what="its connection closed")


def test_no_process_starts_while_another_worker_is_connected(database: Database) -> None:
    url, ids = queued(database, "crowd", BATCH_UPLOADS)
    ahead = parse_ahead(url)
    with ahead:
        with side_connection(sqlalchemy_to_dsn(url), "another-worker"):
            begin(ahead)
            assert ahead.take(ids) == {}
            assert ahead.process_id is None
        begin(ahead)
        assert sorted(ahead.take(ids)) == ids
        assert ahead.process_id is not None
