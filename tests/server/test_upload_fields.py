"""The upload form's fields: typed, bounded, control characters refused with the field named,
labels kept exactly; what makes a repeat; re-queueing a failed upload."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.uploads.form import FIELD_MAX_CHARS
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.server.test_upload_flow import upload, wait_done

REPORT = b'<testsuite name="s"><testcase classname="c" name="t1" time="0.1"/></testsuite>'
NOT_JUNIT = b"<nunit><case/></nunit>"
TEXT_FIELDS = ("job", "branch", "commit", "pipeline", "machine", "idempotency_key")


def _send(server: LiveServer, token: str, report: bytes = REPORT, **fields: Any) -> httpx.Response:
    return upload(server, token, [("r.xml", report)], **fields)


def _refused(answer: httpx.Response, field: str) -> None:
    assert answer.status_code == 422, answer.text
    body = answer.json()
    assert body["code"] == "invalid-field"
    assert [item["loc"][:2] for item in body["detail"]] == [["body", field]], body


@pytest.mark.parametrize("field", [*TEXT_FIELDS, "label"])
@pytest.mark.parametrize("bad", ["a\x00b", "a\x1b[31mb", "line\nbreak"])
def test_control_characters_are_refused_naming_the_field(
    live_server: LiveServer, project: ProjectFixture, field: str, bad: str
) -> None:
    value = f"k={bad}" if field == "label" else bad
    _refused(_send(live_server, project.upload_token, **{field: value}), field)


@pytest.mark.parametrize("field", [*TEXT_FIELDS, "label key", "label value"])
def test_documented_lengths_are_the_limits(
    live_server: LiveServer, project: ProjectFixture, field: str
) -> None:
    limit = FIELD_MAX_CHARS[field]

    def fields(n: int) -> dict[str, str]:
        if field == "label key":
            return {"label": "k" * n + "=v"}
        if field == "label value":
            return {"label": "k=" + "v" * n}
        return {field: "é" * n}  # characters, not bytes

    report = REPORT.replace(b"t1", field.replace(" ", "_").encode())
    at_limit = _send(live_server, project.upload_token, report, **fields(limit))
    assert at_limit.status_code == 202, at_limit.text
    _refused(_send(live_server, project.upload_token, **fields(limit + 1)), field.split()[0])


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("started_at", "0001-01-01T00:00:00"),
        ("started_at", "2999-01-01T00:00:00Z"),
        ("started_at", "yesterday"),
        ("wall_s", "-1"),
        ("wall_s", "nan"),
        ("peak_rss_mib", "inf"),
    ],
)
def test_out_of_range_values_are_refused(
    live_server: LiveServer, project: ProjectFixture, field: str, value: str
) -> None:
    _refused(_send(live_server, project.upload_token, **{field: value}), field)


def test_labels_keep_any_printable_text_exactly(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    labels = {
        "os": "linux, or not",
        "expr": "a=b=c",
        "quote": "\"'`",
        " spaced ": " kept ",
        "emoji": "🦀👩‍💻",
        "ключ": "значение",
    }
    answer = _send(
        live_server,
        project.upload_token,
        label=[f"{k}={v}" for k, v in labels.items()],
        started_at="2026-12-01T10:00:00Z",
        pull_request="42",
        runner_os="Linux",
    )
    assert answer.status_code == 202, answer.text
    doc = wait_done(live_server, project.upload_token, answer.json()["id"])
    assert doc["status"] == "done", doc
    assert doc["metadata"]["labels"] == labels
    assert doc["metadata"]["started_at"] == "2026-12-01T10:00:00+00:00"
    assert (doc["metadata"]["pull_request"], doc["metadata"]["runner_os"]) == ("42", "Linux")


def test_matrix_cells_with_identical_reports_are_two_uploads(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    token = project.upload_token
    linux = _send(live_server, token, label=["os=linux"], pipeline="p1")
    macos = _send(live_server, token, label=["os=macos"], pipeline="p1")
    rerun = _send(live_server, token, label=["os=linux"], pipeline="p2")
    retry = _send(live_server, token, label=["os=linux"], pipeline="p1")
    assert [a.status_code for a in (linux, macos, rerun, retry)] == [202, 202, 202, 200]
    assert len({a.json()["id"] for a in (linux, macos, rerun)}) == 3
    assert retry.json()["id"] == linux.json()["id"]
    assert retry.json()["duplicate"] is True


def test_sending_a_failed_upload_again_requeues_it(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    first = _send(live_server, project.upload_token, NOT_JUNIT)
    assert first.status_code == 202
    failed = wait_done(live_server, project.upload_token, first.json()["id"])
    assert (failed["status"], failed["error_code"]) == ("failed", "not-junit")
    assert failed["attempts"] == 1

    again = _send(live_server, project.upload_token, NOT_JUNIT)
    assert again.status_code == 200
    assert again.json() | {"url": None} == {
        "id": first.json()["id"],
        "status": "queued",
        "url": None,
        "duplicate": True,
        "requeued": True,
    }
    # Processed afresh: one attempt of its own, not a third strike on the old count.
    refailed = wait_done(live_server, project.upload_token, first.json()["id"])
    assert (refailed["status"], refailed["attempts"]) == ("failed", 1)


def test_retry_endpoint_requeues_failed_uploads_for_its_project_only(
    live_server: LiveServer, engine: Any, project: ProjectFixture
) -> None:
    failed_id = _send(live_server, project.upload_token, NOT_JUNIT).json()["id"]
    done_id = _send(live_server, project.upload_token).json()["id"]
    assert wait_done(live_server, project.upload_token, failed_id)["status"] == "failed"
    assert wait_done(live_server, project.upload_token, done_id)["status"] == "done"
    other = make_project(engine)

    def retry(upload_id: int, token: str) -> httpx.Response:
        return httpx.post(
            f"{live_server.url}/api/v1/uploads/{upload_id}/retry",
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )

    refusals = {
        "read token": retry(failed_id, project.read_token),
        "other project": retry(failed_id, other.admin_token),
        "done upload": retry(done_id, project.upload_token),
        "no such upload": retry(2**62, project.admin_token),
    }
    assert {name: (a.status_code, a.json()["code"]) for name, a in refusals.items()} == {
        "read token": (403, "token-scope"),
        "other project": (403, "token-scope"),
        "done upload": (409, "upload-not-failed"),
        "no such upload": (404, "upload-not-found"),
    }
    for token in (project.admin_token, project.upload_token):
        answer = retry(failed_id, token)
        assert answer.status_code == 200, answer.text
        assert answer.json()["requeued"] is True
        assert wait_done(live_server, project.upload_token, failed_id)["attempts"] == 1
