"""The runner is stored on the run: detected from the report, or the upload's `runner` field
overrides it, which also makes the files that runner's units (#17)."""

from __future__ import annotations

from sqlalchemy import Engine, text

from tests.conftest import LiveServer, ProjectFixture
from tests.server.test_upload_flow import upload, wait_done

SUREFIRE = (
    b'<testsuite name="com.acme.CartTest" tests="2">'
    b'<properties><property name="java.version" value="21"/></properties>'
    b'<testcase classname="com.acme.CartTest" name="adds" time="1.5"/>'
    b'<testcase classname="com.acme.CartTest$Nested" name="removes" time="0.5"/>'
    b"</testsuite>"
)


def _run_and_files(engine: Engine, upload_id: int) -> tuple[str | None, bool, set[str]]:
    with engine.connect() as conn:
        runner, derived, run_id = conn.execute(
            text("SELECT runner, file_derived, id FROM run WHERE upload_id = :u"),
            {"u": upload_id},
        ).one()
        files = conn.execute(
            text(
                "SELECT DISTINCT c.file FROM test_result r JOIN test_case c "
                "ON c.project_id = r.project_id AND c.id = r.test_id WHERE r.run_id = :r"
            ),
            {"r": run_id},
        ).scalars()
        return runner, derived, set(files)


def test_detected_runner_is_stored(
    live_server: LiveServer, engine: Engine, project: ProjectFixture
) -> None:
    answer = upload(live_server, project.upload_token, [("TEST-com.acme.CartTest.xml", SUREFIRE)])
    assert answer.status_code == 202, answer.text
    assert wait_done(live_server, project.upload_token, answer.json()["id"])["status"] == "done"
    runner, derived, files = _run_and_files(engine, answer.json()["id"])
    assert runner == "maven"
    assert derived is True
    assert files == {"src/test/java/com/acme/CartTest.java"}


def test_runner_field_overrides_detection(
    live_server: LiveServer, engine: Engine, project: ProjectFixture
) -> None:
    answer = upload(live_server, project.upload_token, [("r.xml", SUREFIRE)], runner="dotnet")
    assert answer.status_code == 202, answer.text
    assert wait_done(live_server, project.upload_token, answer.json()["id"])["status"] == "done"
    runner, derived, files = _run_and_files(engine, answer.json()["id"])
    assert runner == "dotnet"
    assert derived is False
    assert files == {"com.acme.CartTest", "com.acme.CartTest$Nested"}


def test_unknown_runner_field_is_a_422(live_server: LiveServer, project: ProjectFixture) -> None:
    answer = upload(
        live_server, project.upload_token, [("r.xml", SUREFIRE)], runner="<script>x</script>"
    )
    assert answer.status_code == 422
    assert "<script>" not in answer.text
    assert "unknown runner" in answer.text
