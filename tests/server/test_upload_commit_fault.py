"""A commit that fails answers 5xx and stores nothing: the answer is sent
only after the commit, so it cannot acknowledge a row that never exists."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine, text

from app.factory import create_app
from app.http.deps import ConnDep
from app.settings import Settings
from tests.conftest import Database, LiveServer, ProjectFixture
from tests.server.app_server import serve

FAULT_JOB = "fail-at-commit"


def stored_uploads(engine: Engine, project_id: int) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text("SELECT count(*) FROM upload WHERE project_id = :p"), {"p": project_id}
            ).scalar_one()
        )


@pytest.fixture
def commit_fault(engine: Engine) -> Iterator[None]:
    """A deferred constraint trigger: the INSERT succeeds, the COMMIT of an upload of
    FAULT_JOB raises, as a commit-time failure (serialization, disk, constraint) would."""
    with engine.begin() as conn:
        conn.execute(
            text(
                f"""
                CREATE FUNCTION test_fail_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    IF NEW.job = '{FAULT_JOB}' THEN
                        RAISE EXCEPTION 'commit refused by the test';
                    END IF;
                    RETURN NULL;
                END $$;
                CREATE CONSTRAINT TRIGGER test_fail_commit AFTER INSERT ON upload
                    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
                    EXECUTE FUNCTION test_fail_commit();
                """
            )
        )
    try:
        yield
    finally:
        with engine.begin() as conn:
            conn.execute(text("DROP TRIGGER test_fail_commit ON upload"))
            conn.execute(text("DROP FUNCTION test_fail_commit()"))


@pytest.mark.usefixtures("commit_fault")
def test_a_failed_commit_answers_5xx_and_stores_nothing(
    live_server: LiveServer, engine: Engine, project: ProjectFixture
) -> None:
    answer = httpx.post(
        f"{live_server.url}/api/v1/uploads",
        headers={"Authorization": f"Bearer {project.upload_token}"},
        files=[
            ("file", ("r.xml", b'<testsuite name="s"><testcase name="t" time="1"/></testsuite>'))
        ],
        data={"job": FAULT_JOB},
        timeout=10,
    )
    assert answer.status_code >= 500, answer.text
    assert answer.json()["code"] == "internal-error"
    assert stored_uploads(engine, project.id) == 0


@pytest.mark.usefixtures("commit_fault")
def test_every_route_on_the_connection_dependency_commits_before_answering(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    # Any route using ConnDep, not only uploads: its commit runs before the answer is sent,
    # so a commit that fails is a 5xx, never a 2xx for a row that does not exist.
    app = create_app(Settings(home=database.home, database_url=database.url), engine)

    @app.post("/test-write")
    def write(conn: ConnDep) -> dict[str, str]:
        conn.execute(
            text("INSERT INTO upload (project_id, job, content_hash) VALUES (:p, :j, 'x')"),
            {"p": project.id, "j": FAULT_JOB},
        )
        return {"status": "written"}

    with serve(app) as url:
        answer = httpx.post(f"{url}/test-write", timeout=10)
    assert answer.status_code == 500, answer.text
    assert answer.json()["code"] == "internal-error"
    assert stored_uploads(engine, project.id) == 0
