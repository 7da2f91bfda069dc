"""Reads stay reads: every GET route of the app answers from a database session that cannot
write (`default_transaction_read_only=on`, what a read replica enforces), and none fails.

The routes are enumerated from the app itself, so a GET added later is checked too."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError

from app.factory import create_app
from app.settings import Settings
from tests.changes_history import upload_step_history
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.factories import junit_xml
from tests.server.app_server import serve
from tests.server.test_public_reads import ADMIN_READS
from tests.server.test_sync_routes import api_routes
from tests.uploads import upload_all

READ_ONLY = {"options": "-c default_transaction_read_only=on"}


@pytest.fixture(scope="module")
def read_only_engine(database: Database) -> Iterator[Engine]:
    """An engine whose every transaction is READ ONLY, as on a hot-standby replica."""
    eng = create_engine(database.url, connect_args=READ_ONLY)
    yield eng
    eng.dispose()


@pytest.fixture(scope="module")
def seeded(live_server: LiveServer, engine: Engine) -> ProjectFixture:
    """A public project with a few pipelines of history and one tracked plan (written through
    the ordinary read-write server)."""
    project = make_project(engine, public=True)
    upload_all(
        live_server,
        project.upload_token,
        [
            (f"r{i}.xml", junit_xml(30, files=5, seed=i), {"pipeline": f"p{i}", "wall_s": 90.0})
            for i in range(3)
        ],
    )
    tracked = httpx.post(
        f"{live_server.url}/api/v1/projects/{project.slug}/recommendations/split",
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    )
    assert tracked.status_code == 200, tracked.text
    # Pipeline p1's queue, so the queue reads answer with content.
    opened = httpx.post(
        f"{live_server.url}/api/v1/projects/{project.slug}/queues",
        json={"node": "1", "pipeline": "p1", "collected": ["tests/test_mod0.py::test_case_0"]},
        headers={"Authorization": f"Bearer {project.upload_token}"},
        timeout=60,
    )
    assert opened.status_code == 200, opened.text
    # A lasting step on the default branch, so a change's reads answer with content.
    upload_step_history(live_server, project)
    return project


def get_paths(app_routes: list[object]) -> list[tuple[str, dict[str, str]]]:
    """Every GET route's path and the query it needs (required parameters filled)."""
    needed = {
        "total": "2",
        "nodeid": "tests/test_mod0.py::test_case_0",
        "pipeline": "p1",
        "runner": "go",
    }
    found = []
    for route in api_routes(app_routes):
        if "GET" not in route.methods:
            continue
        query = {
            q.name: needed[q.name]
            for q in route.dependant.query_params
            if q.field_info.is_required()
        }
        found.append((route.path, query))
    # Starlette routes outside FastAPI's (the OpenAPI document).
    found += [
        (str(getattr(r, "path", "")), {})
        for r in app_routes
        if type(r).__name__ == "Route" and "GET" in (getattr(r, "methods", None) or ())
    ]
    return found


def fill(path: str, project: ProjectFixture, upload_id: int, queue_id: int, change_id: int) -> str:
    values = {
        "change_id": str(change_id),
        "slug": project.slug,
        "upload_id": str(upload_id),
        "name": "laptime.css",
        "path": "tests/test_mod0.py",
        "queue_id": str(queue_id),
    }
    return re.sub(r"\{(\w+)(:\w+)?\}", lambda m: values[m.group(1)], path)


def test_the_engine_really_refuses_writes(read_only_engine: Engine) -> None:
    with read_only_engine.connect() as conn, pytest.raises(DBAPIError, match="read-only"):
        conn.execute(text("CREATE TEMP TABLE t (x int)"))


def test_every_get_route_answers_from_a_read_only_database(
    database: Database,
    read_only_engine: Engine,
    seeded: ProjectFixture,
    engine: Engine,
) -> None:
    with engine.connect() as conn:
        upload_id = conn.execute(
            text("SELECT max(id) FROM upload WHERE project_id = :p"), {"p": seeded.id}
        ).scalar_one()
        queue_id = conn.execute(
            text("SELECT max(id) FROM work_queue WHERE project_id = :p"), {"p": seeded.id}
        ).scalar_one()
        change_id = conn.execute(
            text("SELECT max(id) FROM duration_change WHERE project_id = :p"), {"p": seeded.id}
        ).scalar_one()
        plans_before = conn.execute(
            text("SELECT count(*) FROM plan WHERE project_id = :p"), {"p": seeded.id}
        ).scalar_one()
    app = create_app(Settings(home=database.home, database_url=database.url), read_only_engine)
    paths = get_paths(app.routes)
    assert len(paths) > 25  # the whole app: API, pages, docs
    answered: dict[str, int] = {}
    with serve(app) as url:
        for path, query in paths:
            token = seeded.admin_token if path.endswith(ADMIN_READS) else seeded.read_token
            target = fill(path, seeded, upload_id, queue_id, change_id)
            answer = httpx.get(
                url + target,
                params=query,
                headers={"Authorization": f"Bearer {token}"},
                timeout=120,
            )
            answered[target] = answer.status_code
    failed = {p: s for p, s in answered.items() if s >= 500}
    assert not failed, failed
    # Not a pass by refusal: the project's reads answered with content (422 is a question
    # this small history cannot answer, e.g. machine sizing without memory data).
    project_reads = {p: s for p, s in answered.items() if seeded.slug in p}
    assert all(s in (200, 422) for s in project_reads.values()), project_reads
    assert sum(s == 200 for s in project_reads.values()) >= 15, project_reads
    for read in (
        "/api/v1/projects/{}/recommendations/split",
        "/api/v1/projects/{}/shards",
        "/p/{}/recommendations",
        "/p/{}",
    ):
        assert project_reads[read.format(seeded.slug)] == 200
    with engine.connect() as conn:
        plans_after = conn.execute(
            text("SELECT count(*) FROM plan WHERE project_id = :p"), {"p": seeded.id}
        ).scalar_one()
    # The tracked split plan and p1's queue, stored as a plan of its nodes when it opened.
    assert plans_after == plans_before == 2
