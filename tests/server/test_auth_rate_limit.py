"""Failed authentication is rate-limited per client address, counted in the database (one
budget for every web process), with rows only for addresses that failed lately."""

from __future__ import annotations

import threading
import uuid
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import Engine, create_engine, text

from app.db.auth_failures import record_failure, refusal_wait_s
from app.factory import create_app
from app.settings import Settings
from tests.conftest import Database, ProjectFixture, make_project
from tests.pages.conftest import sign_in_form
from tests.server.app_server import serve

T0 = datetime(2026, 12, 4, 12, 0, tzinfo=UTC)


def _address() -> str:
    """An address no other test counts against."""
    return f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().hex[:6]}"


def test_budget_runs_out_and_the_window_frees(engine: Engine) -> None:
    client = _address()

    def wait_s(at: datetime) -> int | None:
        with engine.connect() as conn:
            return refusal_wait_s(conn, client, failures=5, window_s=60.0, now=at)

    def fail(at: datetime) -> None:
        with engine.begin() as conn:
            record_failure(conn, client, window_s=60.0, now=at)

    for i in range(5):
        assert wait_s(T0 + timedelta(seconds=i)) is None
        fail(T0 + timedelta(seconds=i))
    # Refused for what is left of the window the first failure opened: 60 - 10 s.
    assert wait_s(T0 + timedelta(seconds=10)) == 50
    assert wait_s(T0 + timedelta(seconds=59.5)) == 1
    with engine.connect() as conn:  # other addresses are not affected
        assert refusal_wait_s(conn, _address(), failures=5, window_s=60.0, now=T0) is None
    assert wait_s(T0 + timedelta(seconds=60)) is None
    fail(T0 + timedelta(seconds=61))  # a new window, counting from one
    assert wait_s(T0 + timedelta(seconds=62)) is None


def test_ended_windows_are_forgotten(engine: Engine) -> None:
    old, new = _address(), _address()
    with engine.begin() as conn:
        record_failure(conn, old, window_s=60.0, now=T0)
        record_failure(conn, new, window_s=60.0, now=T0 + timedelta(seconds=61))
        kept = conn.execute(
            text("SELECT client FROM auth_failure WHERE client IN (:a, :b)"), {"a": old, "b": new}
        ).scalars()
        assert list(kept) == [new]


def test_concurrent_failures_are_all_counted(engine: Engine) -> None:
    client = _address()

    def fail() -> None:
        for _ in range(25):
            with engine.begin() as conn:
                record_failure(conn, client, window_s=1e6, now=T0)

    threads = [threading.Thread(target=fail) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    with engine.connect() as conn:
        # 200 failures took the whole budget, exactly: a lost update would leave one.
        assert refusal_wait_s(conn, client, failures=200, window_s=1e6, now=T0) is not None
        assert refusal_wait_s(conn, client, failures=201, window_s=1e6, now=T0) is None


def test_bad_tokens_from_one_address_get_429_and_good_tokens_still_work(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    # A server with the default budget (the session's own is lifted: tests/conftest.py).
    settings = Settings(home=database.home, database_url=database.url)
    with serve(create_app(settings, engine)) as base:
        _bad_tokens_then_a_good_one(base, project)


def _bad_tokens_then_a_good_one(base: str, project: ProjectFixture) -> None:
    url = f"{base}/api/v1/projects/{project.slug}/jobs"
    # Loopback has every 127.x address: this client is another machine to the server.
    attacker = httpx.Client(
        base_url=base,
        transport=httpx.HTTPTransport(local_address="127.0.0.2"),
        timeout=30,
    )
    with attacker:
        statuses = [
            attacker.get(url, headers={"Authorization": f"Bearer lt_read_guess{i}"}).status_code
            for i in range(31)
        ]
        assert statuses[:30] == [401] * 30  # the default budget: 30 a minute
        assert statuses[30] == 429
        limited = attacker.get(url, headers={"Authorization": "Bearer lt_read_guess"})
        assert limited.status_code == 429
        # The rest of the 60 s window the first failure opened (31 requests take seconds).
        assert 30 <= int(limited.headers["retry-after"]) <= 60
        assert "too many failed" in limited.json()["detail"]
        # Once limited, the address cannot try even a right guess.
        right = attacker.get(url, headers={"Authorization": f"Bearer {project.read_token}"})
        assert right.status_code == 429
        # The sign-in form is limited as well.
        form = sign_in_form(attacker)
        signin = attacker.post("/signin", data={**form, "token": project.read_token})
        assert signin.status_code == 429
        assert "retry-after" in signin.headers
    # Another address of its own: 127.0.0.1's failures are every other test's.
    with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.3")) as other:
        good = other.get(url, headers={"Authorization": f"Bearer {project.read_token}"})
    assert good.status_code == 200


def test_a_failure_is_counted_with_one_pooled_connection(database: Database) -> None:
    # The failure is written in a transaction of its own: taken while the request still held
    # its connection, a pool of one would wait for itself (503 after the pool timeout).
    engine = create_engine(database.url, pool_size=1, max_overflow=0, pool_timeout=5)
    settings = Settings(home=database.home, database_url=database.url, auth_failures=2)
    try:
        project = make_project(engine)
        # An address of its own: failures are counted per address in the shared database, and
        # other tests' wrong tokens from 127.0.0.1 would spend this test's budget of 2.
        own_address = httpx.HTTPTransport(local_address="127.0.0.9")
        with (
            serve(create_app(settings, engine)) as url,
            httpx.Client(base_url=url, transport=own_address) as client,
        ):
            wrong = {"Authorization": "Bearer lt_read_wrong"}
            jobs = f"/api/v1/projects/{project.slug}/jobs"
            assert client.get(jobs, headers=wrong).status_code == 401
            upload = client.post(
                "/api/v1/uploads", headers=wrong, files=[("file", ("r.xml", b"<testsuite/>"))]
            )
            assert upload.status_code == 401
            # Both failures were counted: the budget of 2 is spent, for every route.
            assert client.get(jobs, headers=wrong).status_code == 429
            form = sign_in_form(client)
            assert client.post("/signin", data={**form, "token": "x"}).status_code == 429
    finally:
        with engine.begin() as conn:
            conn.execute(text("DELETE FROM auth_failure WHERE client = '127.0.0.1'"))
        engine.dispose()
