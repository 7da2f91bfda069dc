"""`laptime upload retry ID` against a real server: a failed upload goes back in the queue."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from app.cli.main import cli
from tests.conftest import LiveServer, ProjectFixture
from tests.server.test_upload_flow import upload, wait_done


def test_retry_requeues_a_failed_upload_and_refuses_a_done_one(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    failed = upload(live_server, project.upload_token, [("r.xml", b"<nunit><case/></nunit>")])
    upload_id = failed.json()["id"]
    assert wait_done(live_server, project.upload_token, upload_id)["status"] == "failed"
    server = ["--url", live_server.url, "--token", project.upload_token]

    result = CliRunner().invoke(cli, ["upload", "retry", str(upload_id), *server])
    assert result.exit_code == 0, result.output
    assert result.output == f"upload {upload_id}: queued /api/v1/uploads/{upload_id}\n"
    again = wait_done(live_server, project.upload_token, upload_id)
    assert (again["status"], again["attempts"]) == ("failed", 1)

    report = '<testsuite name="s"><testcase classname="c" name="ok" time="1"/></testsuite>'
    done = upload(live_server, project.upload_token, [("r.xml", report.encode())])
    done_id = done.json()["id"]
    wait_done(live_server, project.upload_token, done_id)
    refused = CliRunner().invoke(cli, ["upload", "retry", str(done_id), *server])
    assert refused.exit_code == 1
    assert f"upload {done_id} is done, not failed" in refused.output


def test_upload_help_names_both_uses() -> None:
    result = CliRunner().invoke(cli, ["upload", "--help"])
    assert result.exit_code == 0
    assert "retry" in result.output
    assert "send" in result.output


def test_sending_a_failed_upload_again_says_it_was_requeued(
    live_server: LiveServer, project: ProjectFixture, tmp_path: Path
) -> None:
    report = tmp_path / "r.xml"
    report.write_bytes(b"<nunit><case/></nunit>")
    server = ["--url", live_server.url, "--token", project.upload_token, "--job", "j"]
    first = CliRunner().invoke(cli, ["upload", str(report), *server, "--wait"])
    assert first.exit_code == 1
    assert "[not-junit]" in first.output
    again = CliRunner().invoke(cli, ["upload", str(report), *server])
    assert again.exit_code == 0, again.output
    assert "queued (sent before and failed: re-queued)" in again.output
