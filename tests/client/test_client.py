"""The CI client's uploader (laptime_ci.upload) against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import gzip
import socket

import pytest

from laptime_ci.upload import (
    UploadError,
    UploadMetadata,
    default_idempotency_key,
    detect_ci_metadata,
    metadata_from_env,
    parse_labels,
    upload_reports,
    wait_for_upload,
)
from tests.client.fake_server import fake_server

ACCEPTED = {"id": 12, "status": "queued", "url": "/api/v1/uploads/12", "duplicate": False}
REPORT = b'<testsuite name="s"><testcase name="t" time="0.5"/></testsuite>'


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_retries_503_twice_then_accepts_with_backoff_and_one_key():
    delays: list[float] = []
    with fake_server() as server:
        server.posts = [(503, {"detail": "busy"}), (503, {"detail": "busy"}), (202, ACCEPTED)]
        answer = upload_reports(
            [("junit.xml", REPORT)],
            url=server.url + "/",
            token="tok",
            metadata=UploadMetadata(pipeline="p1", job="j"),
            backoff_s=0.5,
            sleep=delays.append,
            rng=lambda: 0.0,  # the low end of the jitter: half of each exponential step
        )
    assert answer == ACCEPTED
    assert [r.path for r in server.requests] == ["/api/v1/uploads"] * 3
    assert delays == [0.25, 0.5]
    keys = {tuple(r.form()[0]["idempotency_key"]) for r in server.requests}
    assert len(keys) == 1  # every retry carries the same idempotency key


def test_multipart_fields_headers_and_gzip():
    already = gzip.compress(b"lines", mtime=0)
    metadata = UploadMetadata(
        commit="abc",
        branch="main",
        pipeline="77",
        job="unit",
        machine="xlarge",
        labels={"python": "3.11", "os": "linux"},
        started_at="2026-12-02T18:00:00+00:00",
        wall_s=12.5,
        peak_rss_mib=812.5,
        idempotency_key="k1",
    )
    with fake_server() as server:
        server.posts = [(202, ACCEPTED)]
        upload_reports(
            [("junit.xml", REPORT), ("durations.txt.gz", already)],
            url=server.url,
            token="secret",
            metadata=metadata,
        )
    (request,) = server.requests
    assert request.headers["authorization"] == "Bearer secret"
    fields, files = request.form()
    assert fields == {
        "commit": ["abc"],
        "branch": ["main"],
        "pipeline": ["77"],
        "job": ["unit"],
        "machine": ["xlarge"],
        "label": ["os=linux", "python=3.11"],
        "started_at": ["2026-12-02T18:00:00+00:00"],
        "wall_s": ["12.5"],
        "peak_rss_mib": ["812.5"],
        "idempotency_key": ["k1"],
    }
    assert sorted(files) == ["durations.txt.gz", "junit.xml.gz"]
    assert all(name == "file" for name, _ in files.values())
    assert request.report_bytes("junit.xml.gz") == REPORT
    # An already-gzipped file is sent as is, not compressed twice.
    assert files["durations.txt.gz"][1] == already


def test_unknown_metadata_is_left_out():
    with fake_server() as server:
        server.posts = [(200, {**ACCEPTED, "duplicate": True})]
        answer = upload_reports(
            [("a.json", b"{}")], url=server.url, token="t", metadata=UploadMetadata()
        )
    fields, _ = server.requests[0].form()
    assert set(fields) == {"idempotency_key"}
    assert answer["duplicate"] is True


def test_4xx_raises_with_server_detail_and_no_retry():
    with fake_server() as server:
        server.posts = [(400, {"detail": "unknown report format"})]
        with pytest.raises(UploadError, match=r"400.*unknown report format") as info:
            upload_reports([("x", b"?")], url=server.url, token="t", metadata=UploadMetadata())
    assert info.value.status_code == 400
    assert len(server.requests) == 1


def test_422_validation_list_is_readable():
    detail = [{"loc": ["body", "file"], "msg": "field required", "type": "missing"}]
    with fake_server() as server:
        server.posts = [(422, {"detail": detail})]
        with pytest.raises(UploadError, match=r"body\.file: field required"):
            upload_reports([("x", b"?")], url=server.url, token="t", metadata=UploadMetadata())


def test_5xx_exhausts_retries():
    delays: list[float] = []
    with fake_server() as server:
        server.posts = [(502, b"bad gateway")]
        with pytest.raises(
            UploadError, match=r"after 3 attempts: server error \(502\): bad gateway"
        ):
            upload_reports(
                [("x", b"?")],
                url=server.url,
                token="t",
                metadata=UploadMetadata(),
                retries=2,
                backoff_s=0.25,
                sleep=delays.append,
                rng=lambda: 0.0,
            )
    assert len(server.requests) == 3
    assert delays == [0.125, 0.25]


def test_connection_refused_is_retried_then_fails():
    delays: list[float] = []
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(UploadError, match="after 2 attempts: cannot reach"):
        upload_reports(
            [("x", b"?")],
            url=url,
            token="t",
            metadata=UploadMetadata(),
            retries=1,
            sleep=delays.append,
            rng=lambda: 0.0,
        )
    assert delays == [0.25]


def test_default_idempotency_key_depends_on_pipeline_job_and_content():
    files = [("a.xml", b"one")]
    key = default_idempotency_key(files, UploadMetadata(pipeline="1", job="j"))
    assert key == default_idempotency_key(files, UploadMetadata(pipeline="1", job="j", commit="x"))
    assert key != default_idempotency_key(files, UploadMetadata(pipeline="2", job="j"))
    assert key != default_idempotency_key(files, UploadMetadata(pipeline="1", job="k"))
    assert key != default_idempotency_key(
        [("a.xml", b"two")], UploadMetadata(pipeline="1", job="j")
    )


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        (
            {
                "GITHUB_ACTIONS": "true",
                "GITHUB_SHA": "s1",
                "GITHUB_REF_NAME": "main",
                "GITHUB_HEAD_REF": "",
                "GITHUB_RUN_ID": "99",
                "GITHUB_RUN_ATTEMPT": "2",
                "GITHUB_JOB": "tests",
            },
            {"commit": "s1", "branch": "main", "pipeline": "99-2", "job": "tests"},
        ),
        (
            {
                "GITHUB_ACTIONS": "true",
                "GITHUB_SHA": "s2",
                "GITHUB_REF_NAME": "5/merge",
                "GITHUB_HEAD_REF": "feature",
                "GITHUB_RUN_ID": "100",
            },
            {"commit": "s2", "branch": "feature", "pipeline": "100"},
        ),
        (
            {
                "GITLAB_CI": "true",
                "CI_COMMIT_SHA": "g",
                "CI_COMMIT_REF_NAME": "dev",
                "CI_PIPELINE_ID": "5",
                "CI_JOB_NAME": "pytest 1/2",
            },
            {"commit": "g", "branch": "dev", "pipeline": "5", "job": "pytest 1/2"},
        ),
        (
            {
                "CIRCLECI": "true",
                "CIRCLE_SHA1": "c",
                "CIRCLE_BRANCH": "b",
                "CIRCLE_WORKFLOW_ID": "wf",
                "CIRCLE_JOB": "test",
            },
            {"commit": "c", "branch": "b", "pipeline": "wf", "job": "test"},
        ),
        (
            {
                "BUILDKITE": "true",
                "BUILDKITE_COMMIT": "k",
                "BUILDKITE_BRANCH": "m",
                "BUILDKITE_BUILD_ID": "uuid",
                "BUILDKITE_STEP_KEY": "unit",
            },
            {"commit": "k", "branch": "m", "pipeline": "uuid", "job": "unit"},
        ),
        (
            {"BUILDKITE": "true", "BUILDKITE_LABEL": ":pytest: unit", "BUILDKITE_STEP_KEY": "u"},
            {"job": ":pytest: unit"},
        ),
        ({"HOME": "/root", "CI": "true"}, {}),
    ],
    ids=["github", "github-pr", "gitlab", "circleci", "buildkite", "buildkite-label", "none"],
)
def test_detect_ci_metadata(env, expected):
    assert detect_ci_metadata(env) == expected


def test_metadata_from_env_overrides_and_labels():
    env = {
        "GITLAB_CI": "true",
        "CI_PIPELINE_ID": "5",
        "CI_JOB_NAME": "ci-job",
        "LAPTIME_JOB": "mine",
        "LAPTIME_MACHINE": "large",
        "LAPTIME_LABELS": "os=linux, python=3.11",
    }
    metadata = metadata_from_env(env)
    assert (metadata.pipeline, metadata.job, metadata.machine) == ("5", "mine", "large")
    assert metadata.labels == {"os": "linux", "python": "3.11"}
    filled = metadata.with_session(started_at="t0", wall_s=3.0, peak_rss_mib=None)
    assert (filled.started_at, filled.wall_s, filled.peak_rss_mib) == ("t0", 3.0, None)


def test_parse_labels_rejects_malformed():
    assert parse_labels(["a=1", "b=x=y"]) == {"a": "1", "b": "x=y"}
    with pytest.raises(ValueError, match="'nope' is not key=value"):
        parse_labels(["nope"])


def test_wait_polls_until_done_and_retries_5xx():
    seen: list[str] = []
    with fake_server() as server:
        server.gets = [
            (200, {"id": 12, "status": "queued"}),
            (503, {"detail": "restarting"}),
            (200, {"id": 12, "status": "processing"}),
            (200, {"id": 12, "status": "done", "counts": {"results": 3}}),
        ]
        final = wait_for_upload(
            server.url,
            12,
            token="t",
            poll_s=0.0,
            on_status=lambda a: seen.append(a["status"]),
            sleep=lambda s: None,
        )
    assert final["counts"] == {"results": 3}
    assert seen == ["queued", "processing", "done"]
    assert [r.path for r in server.requests] == ["/api/v1/uploads/12"] * 4
    assert server.requests[0].headers["authorization"] == "Bearer t"


def test_wait_times_out_on_a_stuck_upload():
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    with fake_server() as server:
        server.gets = [(200, {"id": 3, "status": "processing"})]
        with pytest.raises(UploadError, match="not finished after 5 s"):
            wait_for_upload(
                server.url, 3, token="t", poll_s=1.0, timeout_s=5, sleep=sleep, clock=lambda: now[0]
            )
    assert len(server.requests) == 6  # polls at t = 0, 1, 2, 3, 4 and 5


def test_wait_raises_on_404():
    with fake_server() as server:
        server.gets = [(404, {"detail": "upload not found"})]
        with pytest.raises(UploadError, match=r"404.*upload not found"):
            wait_for_upload(server.url, 9, token="t", sleep=lambda s: None)
