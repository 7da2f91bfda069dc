"""Every refusal answers the one coded body: the framework's own (no route, wrong method,
an undecodable body, oversized headers) and ours, and a 422 is `invalid-field` with a list
naming the field, or `request-unprocessable` with a sentence: the two bodies the schema says."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from app.http.responses import ErrorBody, InvalidFieldBody
from tests.conftest import LiveServer, ProjectFixture


def send(
    server: LiveServer, method: str, path: str, token: str | None, **kw: Any
) -> httpx.Response:
    headers = {**kw.pop("headers", {}), **({"Authorization": f"Bearer {token}"} if token else {})}
    return httpx.request(method, f"{server.url}{path}", headers=headers, timeout=30, **kw)


@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/api/v1/no-such-route", 404, "not-found"),
        ("DELETE", "/healthz", 405, "method-not-allowed"),
        ("GET", "/api/v1/projects/no-such-project/rollups", 404, "project-not-found"),
        ("GET", "/api/v1/projects/{slug}/rollups?by=nope", 422, "request-unprocessable"),
        ("DELETE", "/api/v1/projects/{slug}/tokens/999999", 404, "token-not-found"),
        ("GET", "/api/v1/uploads/999999", 404, "upload-not-found"),
    ],
)
def test_refusals_carry_a_code_and_a_sentence(
    live_server: LiveServer, project: ProjectFixture, method: str, path: str, status: int, code: str
) -> None:
    answer = send(live_server, method, path.format(slug=project.slug), project.admin_token)
    assert answer.status_code == status, answer.text
    body = ErrorBody.model_validate(answer.json())
    assert body.code == code


def test_a_body_that_is_not_utf8_is_400_malformed_body(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    answer = send(
        live_server,
        "POST",
        f"/api/v1/projects/{project.slug}/tokens",
        project.admin_token,
        content=b'{"scope": "\xff"}',
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code == 400, answer.text
    assert ErrorBody.model_validate(answer.json()).code == "malformed-body"


def test_oversized_headers_answer_431_with_a_code(live_server: LiveServer) -> None:
    answer = send(live_server, "GET", "/healthz", None, headers={"X-Big": "a" * 70_000})
    assert answer.status_code == 431
    assert ErrorBody.model_validate(answer.json()).code == "headers-too-large"


@pytest.mark.parametrize(
    ("path", "files", "loc"),
    [
        ("/api/v1/projects/{slug}/rollups?label=no-equals-sign", None, ["query", "label", 0]),
        ("/api/v1/projects/{slug}/recommendations/split?jobs=7-2", None, ["query", "jobs"]),
        ("/api/v1/uploads", [("file", ("empty.xml", b""))], ["body", "file", 0]),
    ],
)
def test_invalid_fields_are_listed_by_location(
    live_server: LiveServer,
    project: ProjectFixture,
    path: str,
    files: list[Any] | None,
    loc: list[str | int],
) -> None:
    method, token = ("POST", project.upload_token) if files else ("GET", project.read_token)
    answer = send(live_server, method, path.format(slug=project.slug), token, files=files)
    assert answer.status_code == 422, answer.text
    body = InvalidFieldBody.model_validate(answer.json())
    assert [issue.loc for issue in body.detail] == [loc]
