"""Where the OpenAPI schema and the server used to disagree (each found by schemathesis): what
the schema calls valid is answered, what it calls invalid is refused, and a 405 names every
method its route serves."""

from __future__ import annotations

import json
import socket
from urllib.parse import urlencode, urlsplit

import httpx
import pytest
from sqlalchemy import Engine

from app.db.projects import MAX_SLUG
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.server.test_upload_flow import upload

FILTERS = ("branch", "job", "label", "marker", "exclude_marker", "file")


@pytest.fixture(scope="module")
def proj(live_server: LiveServer, engine: Engine) -> ProjectFixture:
    return make_project(engine)


def _get(server: LiveServer, token: str, path: str, **params: object) -> httpx.Response:
    return httpx.get(
        f"{server.url}{path}",
        params=params,  # type: ignore[arg-type]
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def test_every_read_documents_its_filters_as_plain_string_arrays(live_server: LiveServer) -> None:
    paths = httpx.get(f"{live_server.url}/openapi.json", timeout=30).json()["paths"]
    seen = 0
    for operations in paths.values():
        for operation in operations.values():
            for param in operation.get("parameters", []):
                if param["name"] in FILTERS and param["in"] == "query":
                    seen += 1
                    schema = param["schema"]
                    assert schema["type"] == "array", (param["name"], schema)
                    assert "minLength" not in schema["items"]  # so "" is valid: no filter
    assert seen >= 6 * 8


@pytest.mark.parametrize("name", FILTERS)
def test_an_empty_filter_is_no_filter(
    live_server: LiveServer, proj: ProjectFixture, name: str
) -> None:
    path = f"/api/v1/projects/{proj.slug}/jobs"
    unfiltered = _get(live_server, proj.read_token, path)
    empty = _get(live_server, proj.read_token, path, **{name: ""})
    assert (unfiltered.status_code, empty.status_code) == (200, 200), empty.text
    assert empty.json() == unfiltered.json()


def test_runner_field_is_an_enum_and_empty_means_detect(
    live_server: LiveServer, proj: ProjectFixture
) -> None:
    schema = httpx.get(f"{live_server.url}/openapi.json", timeout=30).json()
    form = next(
        s for n, s in schema["components"]["schemas"].items() if "runner" in s.get("properties", {})
    )
    runner = form["properties"]["runner"]
    assert {"", "auto", "pytest", "jest"} <= set(runner["enum"]), runner
    report = [("r.xml", b'<testsuite><testcase classname="a" name="t" time="1"/></testsuite>')]
    empty = upload(live_server, proj.upload_token, report, runner="")
    assert empty.status_code == 202, empty.text
    wrong = upload(live_server, proj.upload_token, report, runner="nosuch")
    assert wrong.status_code == 422


@pytest.mark.parametrize(
    ("path", "methods"),
    [("catalogue", {"GET", "PUT"}), ("tokens", {"GET", "POST"}), ("shards", {"GET", "POST"})],
)
def test_a_405_allows_every_method_of_its_route(
    live_server: LiveServer, proj: ProjectFixture, path: str, methods: set[str]
) -> None:
    response = httpx.request(
        "PATCH",
        f"{live_server.url}/api/v1/projects/{proj.slug}/{path}",
        headers={"Authorization": f"Bearer {proj.admin_token}"},
        timeout=30,
    )
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) == methods
    assert response.json()["code"] == "method-not-allowed"


@pytest.mark.parametrize("days", [True, "7", 1.5])
def test_token_lifetime_is_a_json_integer(
    live_server: LiveServer, proj: ProjectFixture, days: object
) -> None:
    response = httpx.post(
        f"{live_server.url}/api/v1/projects/{proj.slug}/tokens",
        json={"scope": "read", "expires_in_days": days},
        headers={"Authorization": f"Bearer {proj.admin_token}"},
        timeout=30,
    )
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["loc"] == ["body", "expires_in_days"]


# The most bytes one character takes in a query string: four UTF-8 bytes, each `%XX`.
WORST_CHAR_BYTES = 12


def _worst_bytes(schema: dict[str, object], name: str) -> int:
    """The most bytes a value of this parameter schema takes in a URL (as `name=value&`)."""
    if "anyOf" in schema:
        return max(_worst_bytes(s, name) for s in schema["anyOf"])  # type: ignore[attr-defined]
    if schema.get("type") == "array":
        assert "maxItems" in schema, (name, schema)
        return int(schema["maxItems"]) * _worst_bytes(schema["items"], name)  # type: ignore[arg-type,call-overload]
    if schema.get("type") in ("integer", "number", "boolean", "null"):
        return len(name) + 2 + 32  # a bounded number or a boolean, as text
    if "enum" in schema:
        values = schema["enum"]
        return len(name) + 2 + WORST_CHAR_BYTES * max(len(str(v)) for v in values)  # type: ignore[attr-defined]
    if schema.get("format") == "date":
        return len(name) + 2 + 10
    assert "maxLength" in schema, (name, schema)
    return len(name) + 2 + WORST_CHAR_BYTES * int(schema["maxLength"])  # type: ignore[call-overload]


def test_no_schema_valid_request_line_is_too_long_for_the_server(live_server: LiveServer) -> None:
    """Every path and query parameter is bounded, and together at their bounds (every
    character four UTF-8 bytes) they fit the request target the server reads. The slug is
    counted at its database bound: a longer one names no project (404 before any query);
    its schema stays a plain string, because schemathesis's coverage phase would otherwise
    report the negative slug it generates and our config then overrides."""
    from app.server_options import MAX_TARGET_BYTES

    paths = httpx.get(f"{live_server.url}/openapi.json", timeout=30).json()["paths"]
    for path, operations in paths.items():
        for method, operation in operations.items():
            params = operation.get("parameters", [])
            worst = len(path) + sum(
                WORST_CHAR_BYTES * MAX_SLUG
                if p["name"] == "slug"
                else _worst_bytes(p["schema"], p["name"])
                for p in params
                if p["in"] != "header"
            )
            assert worst <= MAX_TARGET_BYTES, (method, path, worst)
            # What a request head over its budget answers is documented too.
            assert {"414", "431"} <= set(operation["responses"]), (method, path)


def _send_and_read(server: LiveServer, request: bytes) -> bytes:
    """Send a `Connection: close` request as bytes and read the answer until the server closes
    (no half-close: the server takes an early EOF for a client that left)."""
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=60) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_the_longest_valid_filters_are_answered(
    live_server: LiveServer, proj: ProjectFixture
) -> None:
    """Every filter of the jobs read at its most values, each at its longest, of four-byte
    characters: answered (not 414/431)."""
    paths = httpx.get(f"{live_server.url}/openapi.json", timeout=30).json()["paths"]
    path = "/api/v1/projects/{slug}/jobs"
    params: list[tuple[str, str]] = []
    for param in paths[path]["get"]["parameters"]:
        if param["name"] in FILTERS:
            schema = param["schema"]
            longest = "\U0001f600" * schema["items"]["maxLength"]
            if param["name"] == "label":
                longest = "k=" + longest[2:]
            params += [(param["name"], longest)] * schema["maxItems"]
    # httpx refuses a query over 64 KiB: the request goes over a socket as bytes.
    target = f"{path.format(slug=proj.slug)}?{urlencode(params)}"
    head = f"GET {target} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
    head += f"Authorization: Bearer {proj.read_token}\r\n\r\n"
    answer = _send_and_read(live_server, head.encode())
    status, _, body = answer.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 200 "), answer[:300]
    nothing = _get(live_server, proj.read_token, path.format(slug=proj.slug), branch="nosuch")
    assert json.loads(body) == nothing.json()


def _one_case(name: str) -> bytes:
    """A report of its own (an upload of the same content is answered as a duplicate)."""
    return f'<testsuite><testcase classname="a" name="{name}" time="1"/></testsuite>'.encode()


@pytest.mark.parametrize(
    "started_at", ["0", "1700000000", "2026-12-04", "tomorrow", "2026-12-04T09:00:00 UTC"]
)
def test_started_at_is_an_iso_date_and_time(
    live_server: LiveServer, proj: ProjectFixture, started_at: str
) -> None:
    report = [("r.xml", _one_case(started_at))]
    wrong = upload(
        live_server, proj.upload_token, report, started_at=started_at, idempotency_key=started_at
    )
    assert wrong.status_code == 422, wrong.text
    (issue,) = wrong.json()["detail"]
    assert issue["loc"] == ["body", "started_at"]
    assert "ISO 8601" in issue["msg"], issue


@pytest.mark.parametrize(
    "started_at",
    [
        "2026-12-01T09:00:00Z",
        "2026-12-01T09:00:00+01:00",
        "2026-12-01 09:00:00.25",
        "2026-12-01T09:00",
    ],
)
def test_started_at_takes_iso_date_times_with_or_without_offset(
    live_server: LiveServer, proj: ProjectFixture, started_at: str
) -> None:
    report = [("r.xml", _one_case(started_at))]
    response = upload(
        live_server, proj.upload_token, report, started_at=started_at, idempotency_key=started_at
    )
    assert response.status_code == 202, response.text


def test_an_empty_plan_is_no_plan(live_server: LiveServer, proj: ProjectFixture) -> None:
    path = f"/api/v1/projects/{proj.slug}/recommendations/accuracy"
    unfiltered = _get(live_server, proj.read_token, path)
    empty = _get(live_server, proj.read_token, path, plan="")
    assert (unfiltered.status_code, empty.status_code) == (200, 200), empty.text
    assert empty.json() == unfiltered.json()


@pytest.mark.parametrize("name", ["started_at", "wall_s", "peak_rss_mib", "job_wall_s", "backfill"])
def test_an_empty_form_field_is_not_given_in_the_schema_too(
    live_server: LiveServer, proj: ProjectFixture, name: str
) -> None:
    """A form cannot send null: an empty field is one not given, for the server (its default)
    and for the schema (which admits the empty string beside the field's type)."""
    schema = httpx.get(f"{live_server.url}/openapi.json", timeout=30).json()
    form = next(
        s for n, s in schema["components"]["schemas"].items() if "runner" in s.get("properties", {})
    )
    assert {"enum": [""]} in form["properties"][name]["anyOf"]
    report = [("r.xml", _one_case(f"empty-{name}"))]
    response = upload(live_server, proj.upload_token, report, **{name: ""})
    assert response.status_code == 202, response.text


def test_a_split_question_is_the_same_read_or_tracked(
    live_server: LiveServer, proj: ProjectFixture
) -> None:
    # GET reads a plan, POST tracks it: the one question, documented and answered alike.
    paths = httpx.get(f"{live_server.url}/openapi.json", timeout=30).json()["paths"]
    split = paths["/api/v1/projects/{slug}/recommendations/split"]
    assert split["get"]["parameters"] == split["post"]["parameters"]
    url = f"{live_server.url}/api/v1/projects/{proj.slug}/recommendations/split"
    headers = {"Authorization": f"Bearer {proj.read_token}"}
    read = httpx.get(url, params={"cell": ""}, headers=headers, timeout=60)
    tracked = httpx.post(url, params={"cell": ""}, headers=headers, timeout=60)
    assert read.status_code == tracked.status_code != 500, tracked.text
    assert read.json().get("code") == tracked.json().get("code")
