"""`laptime upload` through click's CliRunner against a real HTTP server."""

from __future__ import annotations

import gzip

import pytest
from click.testing import CliRunner

from app.cli.main import cli
from tests.client.fake_server import fake_server

ACCEPTED = {"id": 12, "status": "queued", "url": "/api/v1/uploads/12", "duplicate": False}
CI_VARS = (
    "GITHUB_ACTIONS",
    "GITHUB_RUN_ID",
    "GITLAB_CI",
    "CI_PIPELINE_ID",
    "CIRCLECI",
    "CIRCLE_WORKFLOW_ID",
    "BUILDKITE",
    "BUILDKITE_BUILD_ID",
    "LAPTIME_URL",
    "LAPTIME_TOKEN",
    "LAPTIME_JOB",
    "LAPTIME_MACHINE",
    "LAPTIME_LABELS",
)


@pytest.fixture
def report(tmp_path, monkeypatch):
    for name in CI_VARS:
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "junit.xml"
    path.write_bytes(b"<testsuite/>")
    return path


def test_upload_prints_id_status_url_and_sends_env_and_flags(report):
    env = {
        "GITLAB_CI": "true",
        "CI_PIPELINE_ID": "41",
        "CI_JOB_NAME": "ci",
        "CI_COMMIT_SHA": "c1",
        "LAPTIME_TOKEN": "env-token",
        "LAPTIME_LABELS": "os=linux",
    }
    with fake_server() as server:
        server.posts = [(202, ACCEPTED)]
        result = CliRunner().invoke(
            cli,
            [
                "upload",
                str(report),
                "--job",
                "unit",
                "--label",
                "python=3.11",
                "--wall-s",
                "30",
                "--url",
                server.url,
            ],
            env={**env, "LAPTIME_URL": "http://127.0.0.1:9"},  # the flag wins over the env
        )
    assert result.exit_code == 0, result.output
    assert result.output.strip() == f"upload 12: queued {server.url}/api/v1/uploads/12"
    (request,) = server.requests
    assert request.headers["authorization"] == "Bearer env-token"
    fields, files = request.form()
    assert fields["job"] == ["unit"]
    assert fields["pipeline"] == ["41"]
    assert fields["commit"] == ["c1"]
    assert fields["label"] == ["os=linux", "python=3.11"]
    assert fields["wall_s"] == ["30.0"]
    assert gzip.decompress(files["junit.xml.gz"][1]) == b"<testsuite/>"


def test_upload_4xx_exits_1_with_server_message(report):
    with fake_server() as server:
        server.posts = [(401, {"detail": "invalid token"})]
        result = CliRunner().invoke(
            cli, ["upload", str(report), "--url", server.url, "--token", "bad"]
        )
    assert result.exit_code == 1
    assert "Error: upload refused (401): invalid token" in result.output
    assert "Traceback" not in result.output


def test_upload_without_url_or_token_or_file(report, tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["upload", str(report), "--token", "t"])
    assert result.exit_code == 1
    assert "LAPTIME_URL" in result.output
    result = runner.invoke(cli, ["upload", str(report), "--url", "http://x"])
    assert result.exit_code == 1
    assert "LAPTIME_TOKEN" in result.output
    result = runner.invoke(
        cli, ["upload", str(tmp_path / "missing.xml"), "--url", "http://x", "--token", "t"]
    )
    assert result.exit_code == 1
    assert "missing.xml: cannot read" in result.output
    result = runner.invoke(
        cli, ["upload", str(report), "--url", "http://x", "--token", "t", "--label", "oops"]
    )
    assert result.exit_code == 1
    assert "'oops' is not key=value" in result.output


def test_wait_shows_progress_and_counts(report):
    with fake_server() as server:
        server.posts = [(202, ACCEPTED)]
        server.gets = [
            (200, {"id": 12, "status": "queued"}),
            (200, {"id": 12, "status": "processing"}),
            (200, {"id": 12, "status": "processing"}),
            (
                200,
                {
                    "id": 12,
                    "status": "done",
                    "counts": {"results": 7, "tests": 5},
                    "warnings": ["2 rows hidden"],
                    "error_code": None,
                    "error_detail": None,
                },
            ),
        ]
        result = CliRunner().invoke(
            cli,
            [
                "upload",
                str(report),
                "--url",
                server.url,
                "--token",
                "t",
                "--wait",
                "--poll-interval",
                "0",
            ],
        )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"upload 12: queued {server.url}/api/v1/uploads/12"
    # Progress lines only when the status changes.
    assert [line for line in lines if line.startswith("  status:")] == [
        "  status: queued",
        "  status: processing",
        "  status: done",
    ]
    assert "warning: 2 rows hidden" in lines
    assert lines[-1] == "upload 12: done (results=7, tests=5)"
    assert [r.method for r in server.requests] == ["POST", "GET", "GET", "GET", "GET"]


def test_wait_exits_1_when_processing_failed(report):
    with fake_server() as server:
        server.posts = [(202, ACCEPTED)]
        server.gets = [
            (
                200,
                {
                    "id": 12,
                    "status": "failed",
                    "counts": {},
                    "warnings": [],
                    "error_code": "xml-syntax",
                    "error_detail": "line 3: bad tag",
                },
            )
        ]
        result = CliRunner().invoke(
            cli,
            [
                "upload",
                str(report),
                "--url",
                server.url,
                "--token",
                "t",
                "--wait",
                "--poll-interval",
                "0",
            ],
        )
    assert result.exit_code == 1
    assert "Error: upload 12 failed: [xml-syntax] line 3: bad tag" in result.output
