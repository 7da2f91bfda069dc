"""The runner is stored on the run: detected from the report, or the upload's `runner` field
overrides it, which also makes the files that runner's units."""

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


GO_REPORT = (
    b'<testsuites><testsuite name="example.com/shop/cart" tests="3">'
    b'<properties><property name="go.version" value="go1.22.1"/></properties>'
    b'<testcase classname="example.com/shop/cart" name="TestAdd" time="4.0"/>'
    b'<testcase classname="example.com/shop/cart" name="TestRemove" time="3.0"/>'
    b'<testcase classname="example.com/shop/cart" name="TestTotal" time="1.0"/>'
    b"</testsuite>"
    b'<testsuite name="example.com/shop/price" tests="1">'
    b'<testcase classname="example.com/shop/price" name="TestRound" time="2.0"/>'
    b"</testsuite></testsuites>"
)


def test_shards_and_plan_api_speak_the_stored_runner(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    import httpx

    for n in range(2):
        answer = upload(live_server, project.upload_token, [(f"go{n}.xml", GO_REPORT)], job="go")
        assert wait_done(live_server, project.upload_token, answer.json()["id"])["status"] == "done"
    base = f"{live_server.url}/api/v1/projects/{project.slug}"
    auth = {"Authorization": f"Bearer {project.read_token}"}
    shards = httpx.get(f"{base}/shards", params={"total": 2}, headers=auth, timeout=60).json()
    assert [s["runner"] for s in shards["shards"]] == ["go", "go"]
    commands = sorted(s["command"] for s in shards["shards"])
    # The heavy package splits by top-level test; every test is named once across shards.
    assert all(c.startswith("go test ") for c in commands)
    assert "pip" not in " ".join(commands)
    plan = httpx.get(
        f"{base}/recommendations/split",
        params={"jobs": "2", "overhead": "0"},
        headers=auth,
        timeout=60,
    ).json()
    assert plan["verdict"] == "split", plan["reason"]
    assert plan["config"]["runner"] == "go"
    assert "actions/setup-go" in plan["config"]["github_actions"]
    for job in plan["jobs"]:
        assert job["pytest_args"] == []
        assert job["command"].startswith("go test ")
