"""Kept answers are refreshed after a commit, off the request path.

A commit moves the project's data version, so every kept answer becomes unreachable and the
next reader used to pay the whole recomputation (8.2 s for the first rollup read after a
1,000,000-row commit). Now each commit NOTIFYs; a warmer in the web process recomputes the
rollups readers asked for lately under the new version, so a reader who comes after it finds
them kept, and a reader who comes during it waits for that one computation instead of starting
a second. Checked against a from-scratch read, and counted in rows copied (none).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import httpx
import psycopg
import pytest
from sqlalchemy import Engine

from analysis.errors import AnswerError
from app.db.engine import make_engine
from app.db.retention import prune_before
from app.services.hot_reads import HotRead, HotReads
from app.services.project_reads import (
    FrameCache,
    SharedFrames,
    data_version,
    project_rollup,
    window_filters,
)
from app.services.read_warmer import ReadWarmer
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.server.conftest import sqlalchemy_to_dsn
from tests.server.metrics_scrape import scrape
from tests.server.test_incremental_reads import QUESTIONS, _answers, _run, _same, copied_rows
from tests.server.test_rollup_api import junit
from tests.server.test_upload_flow import upload, wait_done

__all__ = ["copied_rows"]  # the fixture, imported for the tests below


def _version(engine: Engine, project_id: int) -> tuple[int, int, int]:
    with engine.connect() as conn:
        return data_version(conn, project_id)


def _wait_until(check: Callable[[], bool], limit_s: float = 30.0) -> bool:
    """Poll `check()`: a bounded wait for another thread to reach a state, not a timing."""
    pause = threading.Event()
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if check():
            return True
        pause.wait(0.01)
    return False


def test_a_key_being_loaded_by_one_reader_is_loaded_once() -> None:
    shared = SharedFrames()
    started, release = threading.Event(), threading.Event()
    calls: list[str] = []

    def slow_load() -> str:
        calls.append("load")
        started.set()
        release.wait(30)
        return f"answer-{len(calls)}"

    answers: list[str] = []
    first = threading.Thread(target=lambda: answers.append(shared.get(("k",), slow_load)))
    first.start()
    assert started.wait(30)
    second = threading.Thread(target=lambda: answers.append(shared.get(("k",), slow_load)))
    second.start()
    # The second reader must be waiting on the first's load, not loading the key itself.
    assert _wait_until(lambda: shared.waiting(("k",)) == 1)
    release.set()
    first.join(30)
    second.join(30)
    assert calls == ["load"]
    assert answers == ["answer-1", "answer-1"]


def test_a_failed_load_lets_the_waiting_reader_load_it_itself() -> None:
    shared = SharedFrames()
    started, release = threading.Event(), threading.Event()

    def failing_load() -> str:
        started.set()
        release.wait(30)
        raise RuntimeError("database went away")

    errors: list[BaseException] = []

    def first_reader() -> None:
        try:
            shared.get(("k",), failing_load)
        except RuntimeError as exc:
            errors.append(exc)

    first = threading.Thread(target=first_reader)
    first.start()
    assert started.wait(30)
    answers: list[str] = []
    second = threading.Thread(target=lambda: answers.append(shared.get(("k",), lambda: "own")))
    second.start()
    assert _wait_until(lambda: shared.waiting(("k",)) == 1)
    release.set()
    first.join(30)
    second.join(30)
    assert len(errors) == 1
    assert answers == ["own"]


def test_a_waiting_reader_loads_the_key_itself_after_a_bounded_wait() -> None:
    shared = SharedFrames(wait_for_load_s=0.05)
    started, release = threading.Event(), threading.Event()

    def stuck_load() -> str:
        started.set()
        release.wait(30)
        return "late"

    first = threading.Thread(target=lambda: shared.get(("k",), stuck_load))
    first.start()
    try:
        assert started.wait(30)
        # Not stuck behind a load that does not end: the second reader answers on its own.
        assert shared.get(("k",), lambda: "own") == "own"
    finally:
        release.set()
        first.join(30)


def test_a_refused_question_is_not_noted_for_refreshing(engine: Engine, database: Database) -> None:
    project = make_project(engine)
    _run(database, project, range(10), seconds=0.2)
    hot = HotReads()
    with engine.connect() as conn:
        with pytest.raises(AnswerError):
            project_rollup(conn, project.id, window_filters(7), by="colour", hot=hot)
        project_rollup(conn, project.id, window_filters(7), by="file", hot=hot)
    assert [read.by for read in hot.recent(project.id)] == ["file"]


def test_hot_reads_keep_the_latest_per_project_and_forget_old_ones() -> None:
    now = [0.0]
    hot = HotReads(per_project=2, keep_s=60.0, clock=lambda: now[0])
    reads = [HotRead(window_filters(7), by, None, "total_s", True, None) for by in ("a", "b", "c")]
    for read in reads:
        hot.note(1, read)
        now[0] += 1
    assert hot.recent(1) == [reads[2], reads[1]]  # newest first, at most two kept
    hot.note(1, reads[1])  # read again: newest
    assert hot.recent(1) == [reads[1], reads[2]]
    now[0] += 61
    assert hot.recent(1) == []
    assert hot.recent(2) == []


def test_a_commit_refreshes_the_reads_a_page_made(
    engine: Engine, database: Database, copied_rows: dict[str, int]
) -> None:
    project = make_project(engine)
    for day in range(2):
        _run(database, project, range(1_500), seconds=0.5 + day / 10)
    shared, hot = SharedFrames(), HotReads()
    warmer = ReadWarmer(engine, dsn=database.dsn, shared=shared, hot=hot, settle_s=0.0)
    with engine.connect() as conn:
        cache = FrameCache.for_project(conn, project.id, shared)
        for by, days, kw in QUESTIONS:
            project_rollup(
                conn, project.id, window_filters(days), by=by, cache=cache, hot=hot, **kw
            )
    assert len(hot.recent(project.id)) == len(QUESTIONS)
    warmer.start()
    try:
        assert warmer.wait_listening(30)
        _run(database, project, range(1_000, 1_800), seconds=0.9)  # new tests and known ones
        version = _version(engine, project.id)
        assert warmer.wait_warmed(project.id, version, 60)
        copied_rows["rows"] = 0
        kept = _answers(engine, project.id, shared)
        assert copied_rows["rows"] == 0  # every answer was kept by the warmer
        _same(kept, _answers(engine, project.id, SharedFrames()))
    finally:
        warmer.stop()
    assert not warmer.alive


def test_a_prune_refreshes_every_hot_project(engine: Engine, database: Database) -> None:
    project = make_project(engine)
    old_day = date.today() - timedelta(days=40)
    _run(database, project, range(200), seconds=0.2, started_at=_noon(old_day))
    _run(database, project, range(300), seconds=0.3)
    shared, hot = SharedFrames(), HotReads()
    with engine.connect() as conn:
        project_rollup(conn, project.id, window_filters(60), by="file", hot=hot)
    warmer = ReadWarmer(engine, dsn=database.dsn, shared=shared, hot=hot, settle_s=0.0)
    warmer.start()
    try:
        assert warmer.wait_listening(30)
        with engine.begin() as conn:
            prune_before(conn, old_day + timedelta(days=1))
        version = _version(engine, project.id)
        assert warmer.wait_warmed(project.id, version, 60)
    finally:
        warmer.stop()


def test_a_failing_refresh_is_logged_and_the_warmer_goes_on(
    engine: Engine, database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    project = make_project(engine)
    _run(database, project, range(100), seconds=0.2)
    hot = HotReads()
    hot.note(
        project.id, HotRead(window_filters(7), "no-such-dimension", None, "total_s", True, None)
    )
    with engine.connect() as conn:
        project_rollup(conn, project.id, window_filters(7), by="file", hot=hot)
    warmer = ReadWarmer(engine, dsn=database.dsn, shared=SharedFrames(), hot=hot, settle_s=0.0)
    warmer.start()
    try:
        assert warmer.wait_listening(30)
        _run(database, project, range(100), seconds=0.4)
        version = _version(engine, project.id)
        # The bad read fails; the good one is still refreshed and the version counted warmed.
        assert warmer.wait_warmed(project.id, version, 60)
        assert warmer.alive
    finally:
        warmer.stop()
    assert "no-such-dimension" in caplog.text


def _noon(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, 12, tzinfo=UTC)


def test_the_live_server_refreshes_a_read_after_an_upload(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    first = junit([("tests.test_a", "test_one", 2.0, "passed")])
    assert wait_done(live_server, project.upload_token, _sent(live_server, project, first))
    assert [row["key"] for row in _file_rollup(live_server, project)] == ["tests/test_a.py"]
    before = scrape(live_server.url).get("laptime_read_refreshes_total", outcome="refreshed")
    second = junit([("tests.test_b", "test_two", 6.0, "passed")])
    assert wait_done(live_server, project.upload_token, _sent(live_server, project, second))
    # The web process heard the commit and recomputed the read this project's reader made.
    assert _wait_until(
        lambda: (
            scrape(live_server.url).get("laptime_read_refreshes_total", outcome="refreshed")
            > before
        )
    )
    rows = _file_rollup(live_server, project)
    assert {row["key"]: row["total_s"] for row in rows} == {
        "tests/test_b.py": 6.0,
        "tests/test_a.py": 2.0,
    }


def _sent(server: LiveServer, project: ProjectFixture, body: bytes) -> int:
    response = upload(server, project.upload_token, [("r.xml", body)])
    assert response.status_code == 202, response.text
    return int(response.json()["id"])


def _file_rollup(server: LiveServer, project: ProjectFixture) -> list[dict[str, Any]]:
    response = httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/rollups",
        params={"by": "file", "days": 7},
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return list(response.json()["rows"])


def test_a_lost_listening_connection_is_reopened_and_nothing_is_missed(
    engine: Engine, database: Database
) -> None:
    project = make_project(engine)
    _run(database, project, range(100), seconds=0.2)
    hot = HotReads()
    with engine.connect() as conn:
        project_rollup(conn, project.id, window_filters(7), by="file", hot=hot)
    name = f"warmer-{project.slug}"
    warmer = ReadWarmer(
        engine,
        dsn=database.dsn,
        shared=SharedFrames(),
        hot=hot,
        settle_s=0.0,
        retry_first_s=0.05,
        application_name=name,
    )
    warmer.start()
    try:
        assert warmer.wait_listening(30)
        first = _listener_pids(database, name)
        assert len(first) == 1
        with psycopg.connect(database.dsn, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (first[0],))
        # A commit while nobody listens: heard by nobody, refreshed after the reconnect.
        _run(database, project, range(100), seconds=0.7)
        version = _version(engine, project.id)
        assert _wait_until(lambda: _listener_pids(database, name) not in ([], first))
        assert warmer.wait_warmed(project.id, version, 60)
    finally:
        warmer.stop()


def _listener_pids(database: Database, name: str) -> list[int]:
    with psycopg.connect(database.dsn) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s", (name,)
        ).fetchall()
    return [int(pid) for (pid,) in rows]


def _not_compacted(database: Database, project_id: int) -> int:
    with psycopg.connect(database.dsn) as conn:
        row = conn.execute(
            "SELECT count(*) FROM run WHERE project_id = %s AND NOT compacted", (project_id,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_the_warmer_compacts_a_read_projects_backlog_over_its_bound_first(
    database: Database, private_db: str
) -> None:
    """Every read of a project adds up its runs not compacted yet, and a worker busy with its
    queue compacts them only every 128 uploads: the warmer compacts the backlog of a project
    that is read once it reaches its bound, before refreshing. Projects under the bound, or
    that nobody reads, are left to the worker."""
    # A database of its own: no live server's worker compacts its runs behind the test's back.
    own = Database(private_db, sqlalchemy_to_dsn(private_db), database.home)
    engine = make_engine(private_db, pool_size=2)
    read_big, read_small, unread = (make_project(engine) for _ in range(3))
    shared, hot = SharedFrames(), HotReads()
    for project in (read_big, read_small):
        with engine.connect() as conn:
            project_rollup(conn, project.id, window_filters(7), by="test", hot=hot)
    warmer = ReadWarmer(
        engine, dsn=own.dsn, shared=shared, hot=hot, settle_s=0.0, compact_results=1_000
    )
    warmer.start()
    try:
        assert warmer.wait_listening(30)
        for _ in range(3):
            _run(own, read_big, range(400), seconds=0.5)
            _run(own, unread, range(400), seconds=0.5)
        _run(own, read_small, range(400), seconds=0.5)
        for project in (read_big, read_small):
            assert warmer.wait_warmed(project.id, _version(engine, project.id), 60)
    finally:
        warmer.stop()
    assert _not_compacted(own, read_big.id) == 0
    assert _not_compacted(own, read_small.id) == 1
    assert _not_compacted(own, unread.id) == 3
    # The refreshed answers, kept, equal a fresh read of the compacted rollups.
    with engine.connect() as conn:
        kept = project_rollup(
            conn,
            read_big.id,
            window_filters(7),
            by="test",
            cache=FrameCache.for_project(conn, read_big.id, shared),
            hot=HotReads(),
        ).rows
        fresh = project_rollup(
            conn,
            read_big.id,
            window_filters(7),
            by="test",
            cache=FrameCache.for_project(conn, read_big.id, SharedFrames()),
            hot=HotReads(),
        ).rows
    engine.dispose()
    assert len(kept) == 400
    assert kept["total_s"].sum() == pytest.approx(fresh["total_s"].sum(), rel=1e-9)
    assert kept["total_s"].sum() == pytest.approx(3 * sum(0.5 + (i % 13) / 100 for i in range(400)))
