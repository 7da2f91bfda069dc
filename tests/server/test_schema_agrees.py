"""Where the OpenAPI schema and the server used to disagree (each found by schemathesis): what
the schema calls valid is answered, what it calls invalid is refused, and a 405 names every
method its route serves."""

from __future__ import annotations

import httpx
import pytest
from sqlalchemy import Engine

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
