"""`--laptime-upload`: the report reaches the server; any failure is a warning, never a failure."""

from __future__ import annotations

import json

from tests.client.fake_server import fake_server

ACCEPTED = {"id": 5, "status": "queued", "url": "/api/v1/uploads/5", "duplicate": False}


def test_upload_sends_the_report_with_ci_metadata(clean_pytester, monkeypatch):
    clean_pytester.makepyfile(test_a="def test_a():\n    pass\n")
    with fake_server() as server:
        server.posts = [(202, ACCEPTED)]
        monkeypatch.setenv("LAPTIME_URL", server.url)
        monkeypatch.setenv("LAPTIME_TOKEN", "tok")
        monkeypatch.setenv("GITHUB_ACTIONS", "true")
        monkeypatch.setenv("GITHUB_RUN_ID", "7")
        monkeypatch.setenv("GITHUB_RUN_ATTEMPT", "1")
        monkeypatch.setenv("GITHUB_JOB", "unit")
        monkeypatch.setenv("LAPTIME_MACHINE", "medium")
        monkeypatch.setenv("LAPTIME_PROJECT", "demo")
        result = clean_pytester.runpytest("--laptime-report=r.json", "--laptime-upload")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            f"laptime: uploaded 1 tests as upload 5: queued {server.url}/api/v1/uploads/5"
            f" dashboard: {server.url}/p/demo"
        ]
    )
    (request,) = server.requests
    assert request.headers["authorization"] == "Bearer tok"
    fields, _ = request.form()
    assert fields["pipeline"] == ["7-1"]
    assert fields["job"] == ["unit"]
    assert fields["machine"] == ["medium"]
    written = json.loads((clean_pytester.path / "r.json").read_text())
    assert fields["wall_s"] == [repr(written["session"]["wall_s"])]
    assert fields["started_at"] == [written["session"]["started_at"]]
    assert json.loads(request.report_bytes("r.json.gz")) == written


def test_upload_without_report_path_sends_the_document(clean_pytester, monkeypatch):
    clean_pytester.makepyfile(test_a="def test_a():\n    pass\n")
    with fake_server() as server:
        server.posts = [(202, ACCEPTED)]
        monkeypatch.setenv("LAPTIME_URL", server.url)
        monkeypatch.setenv("LAPTIME_TOKEN", "tok")
        before = set(clean_pytester.path.iterdir())
        result = clean_pytester.runpytest("--laptime-upload")
    assert result.ret == 0
    assert set(clean_pytester.path.iterdir()) == before
    document = json.loads(server.requests[0].report_bytes("laptime.json.gz"))
    assert [t["nodeid"] for t in document["tests"]] == ["test_a.py::test_a"]


def test_refused_upload_is_a_warning_and_keeps_the_exit_status(clean_pytester, monkeypatch):
    clean_pytester.makepyfile(test_a="def test_a():\n    pass\n")
    with fake_server() as server:
        server.posts = [(403, {"detail": "token lacks the upload scope"})]
        monkeypatch.setenv("LAPTIME_URL", server.url)
        monkeypatch.setenv("LAPTIME_TOKEN", "tok")
        result = clean_pytester.runpytest("--laptime-upload")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["laptime: upload failed: upload refused (403): token lacks the upload scope"]
    )


def test_unreachable_server_and_missing_settings_are_warnings(clean_pytester, monkeypatch):
    clean_pytester.makepyfile(test_a="def test_a():\n    assert 0\n")
    result = clean_pytester.runpytest("--laptime-upload")
    assert result.ret == 1  # the test's own failure, unchanged
    result.stdout.fnmatch_lines(["laptime: upload skipped: set LAPTIME_URL and LAPTIME_TOKEN"])
    monkeypatch.setenv("LAPTIME_URL", "http://127.0.0.1:9")  # discard port: nothing listens
    monkeypatch.setenv("LAPTIME_TOKEN", "tok")
    monkeypatch.setenv("LAPTIME_UPLOAD_RETRIES", "0")
    result = clean_pytester.runpytest("--laptime-upload")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["laptime: upload failed: upload failed after 1 attempts: cannot reach*"]
    )
