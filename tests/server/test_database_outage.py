"""While the database is unreachable the API answers 503 JSON with Retry-After, and any
unexpected error is a JSON 500 with a code."""

from __future__ import annotations

import httpx
from sqlalchemy import create_engine

from app.db.engine import make_engine
from app.factory import create_app
from app.settings import Settings
from tests.conftest import Database, free_port
from tests.server.app_server import serve


def test_an_unreachable_database_answers_503_json(database: Database) -> None:
    # A real connection failure: a loopback port where nothing listens.
    dead_url = f"postgresql+psycopg://laptime@127.0.0.1:{free_port()}/laptime"
    engine = make_engine(dead_url)
    app = create_app(Settings(home=database.home, database_url=dead_url), engine)

    @app.get("/test-boom")
    def boom() -> None:
        raise RuntimeError("a bug")

    try:
        with serve(app) as url:
            headers = {"Authorization": "Bearer lt_upload_whatever"}
            answers = [
                httpx.post(
                    f"{url}/api/v1/uploads",
                    headers=headers,
                    files=[("file", ("r.xml", b"<testsuite/>"))],
                    timeout=10,
                ),
                httpx.get(f"{url}/api/v1/uploads/1", headers=headers, timeout=10),
                httpx.get(f"{url}/api/v1/projects/p/rollups", headers=headers, timeout=10),
            ]
            bug = httpx.get(f"{url}/test-boom", timeout=10)
    finally:
        engine.dispose()
    for answer in answers:
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"].isdigit()
        assert answer.json()["code"] == "database-unavailable"
        assert answer.json()["detail"]
    assert bug.status_code == 500
    assert bug.json() == {
        "code": "internal-error",
        "detail": "unexpected server error; it has been logged",
    }


def test_an_exhausted_connection_pool_answers_503_json(database: Database) -> None:
    # One connection, held by the test: the request's wait for the pool times out.
    engine = create_engine(database.url, pool_size=1, max_overflow=0, pool_timeout=0.5)
    app = create_app(Settings(home=database.home, database_url=database.url), engine)
    try:
        with serve(app) as url, engine.connect():
            answer = httpx.get(f"{url}/api/v1/projects/p/rollups", timeout=10)
    finally:
        engine.dispose()
    assert answer.status_code == 503, answer.text
    assert answer.json()["code"] == "database-unavailable"
    assert answer.headers["retry-after"].isdigit()
