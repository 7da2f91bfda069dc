"""The uploader's retry policy and `laptime-ci upload`'s exit codes against a real HTTP server."""

from __future__ import annotations

from datetime import UTC

import pytest

from laptime_ci import cli
from laptime_ci.upload import UploadError, UploadMetadata, retry_after_s, upload_reports
from tests.client.fake_server import fake_server

ACCEPTED = {"id": 3, "status": "queued", "url": "/api/v1/uploads/3", "duplicate": False}


class FakeClock:
    """A monotonic clock that only moves when the uploader sleeps."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_is_honoured(status: int) -> None:
    clock = FakeClock()
    with fake_server() as server:
        server.posts = [(status, {"detail": "later"}, {"Retry-After": "7"}), (202, ACCEPTED)]
        answer = upload_reports(
            [("r.xml", b"<testsuite/>")],
            url=server.url,
            token="t",
            metadata=UploadMetadata(),
            sleep=clock.sleep,
            clock=clock,
        )
    assert answer == ACCEPTED
    assert clock.sleeps == [7.0]


def test_total_time_is_bounded_even_with_many_retries() -> None:
    clock = FakeClock()
    with fake_server() as server:
        server.posts = [(503, {"detail": "busy"})]
        with pytest.raises(UploadError, match="would pass the 10 s budget"):
            upload_reports(
                [("r.xml", b"x")],
                url=server.url,
                token="t",
                metadata=UploadMetadata(),
                retries=10,
                backoff_s=1.0,
                max_total_s=10,
                sleep=clock.sleep,
                clock=clock,
            )
    assert sum(clock.sleeps) < 10
    assert len(server.requests) == len(clock.sleeps) + 1 < 11


def test_jitter_stays_within_half_to_full_step() -> None:
    clock = FakeClock()
    with fake_server() as server:
        server.posts = [(502, b"bad gateway")]
        with pytest.raises(UploadError):
            upload_reports(
                [("r.xml", b"x")],
                url=server.url,
                token="t",
                metadata=UploadMetadata(),
                retries=3,
                backoff_s=1.0,
                sleep=clock.sleep,
                clock=clock,
            )
    for step, delay in enumerate(clock.sleeps):
        assert 0.5 * 2**step <= delay < 2**step


def test_retry_after_date_form() -> None:
    from datetime import datetime

    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    headers = {"retry-after": "Thu, 01 Jan 2026 12:00:30 GMT"}
    assert retry_after_s(headers, now=now) == 30.0
    assert retry_after_s({"retry-after": "soon"}) is None


def test_ci_upload_never_fails_the_job_unless_asked(tmp_path, monkeypatch, capsys) -> None:
    report = tmp_path / "junit.xml"
    report.write_text("<testsuite/>")
    monkeypatch.delenv("LAPTIME_PROJECT", raising=False)
    with fake_server() as server:
        server.posts = [(401, {"detail": "invalid token"})]
        args = ["upload", str(report), "--url", server.url, "--token", "bad"]
        assert cli.main(args) == 0
        assert "laptime-ci: upload failed: upload refused (401): invalid token" in (
            capsys.readouterr().err
        )
        assert cli.main([*args, "--fail-on-error"]) == 1


def test_ci_upload_wait_exits_non_zero_when_ingest_failed(tmp_path, monkeypatch, capsys) -> None:
    report = tmp_path / "junit.xml"
    report.write_text("<testsuite/>")
    monkeypatch.setenv("LAPTIME_PROJECT", "demo")
    failed = {"id": 3, "status": "failed", "error_code": "xml-syntax", "error_detail": "bad"}
    with fake_server() as server:
        server.posts = [(202, ACCEPTED)]
        server.gets = [(200, failed)]
        args = ["upload", str(report), "--url", server.url, "--token", "t", "--wait"]
        assert cli.main([*args, "--poll-interval", "0.01"]) == 1
        out = capsys.readouterr()
        assert out.out.splitlines()[0] == (
            f"upload 3: queued {server.url}/api/v1/uploads/3 dashboard: {server.url}/p/demo"
        )
        assert "upload 3 failed: [xml-syntax] bad" in out.err
