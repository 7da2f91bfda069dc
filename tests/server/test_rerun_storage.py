"""A merged rerun is stored with the sum of its attempts and, beside it, the last attempt's
own time."""

from __future__ import annotations

from sqlalchemy import Engine, text

from tests.conftest import LiveServer, ProjectFixture
from tests.parsers.test_last_attempt import PYTEST_RERUNS
from tests.server.test_upload_flow import upload, wait_done


def test_a_merged_rerun_stores_its_last_attempt_beside_the_sum(
    live_server: LiveServer, project: ProjectFixture, engine: Engine
) -> None:
    answer = upload(live_server, project.upload_token, [("junit.xml", PYTEST_RERUNS)])
    doc = wait_done(live_server, project.upload_token, answer.json()["id"])
    assert doc["status"] == "done", doc
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT attempts, duration_s, last_attempt_s FROM test_result "
                "WHERE run_id = :r ORDER BY duration_s"
            ),
            {"r": doc["run_id"]},
        ).all()
    assert [tuple(r) for r in rows] == [(1, 0.5, None), (2, 1.25, 0.25)]
