"""Every read request's work is bounded and bad input answers 4xx naming the parameter."""

from __future__ import annotations

import socket
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from sqlalchemy import Engine

from analysis.split.options import MAX_JOBS
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.server.test_rollup_api import junit
from tests.server.test_upload_flow import upload, wait_done


@pytest.fixture(scope="module")
def small(live_server: LiveServer, engine: Engine) -> ProjectFixture:
    """A project with two jobs of one pipeline: enough for every read endpoint to answer."""
    project = make_project(engine)
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0).isoformat()
    for job, wall in (("a", 60), ("b", 40)):
        body = junit([(f"tests.test_{job}", f"t{i}", 5.0 + i, "passed") for i in range(6)])
        response = upload(
            live_server,
            project.upload_token,
            [(f"{job}.xml", body)],
            job=job,
            pipeline="pipe-1",
            label=["os=linux"],
            wall_s=str(wall),
            started_at=today,
        )
        assert response.status_code == 202, response.text
        assert wait_done(live_server, project.upload_token, response.json()["id"])["status"] == (
            "done"
        )
    return project


def get(server: LiveServer, project: ProjectFixture, path: str, params: Any) -> httpx.Response:
    return httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/{path}",
        params=params,
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    )


def named_params(response: httpx.Response) -> set[str]:
    """The query parameters a 422 names (FastAPI's detail list: loc = ["query", name, ...])."""
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, list), detail
    return {str(item["loc"][1]) for item in detail if item["loc"][0] == "query"}


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        ("recommendations/split", {"jobs": "2-100000"}, "jobs"),
        ("recommendations/split", {"jobs": f"{MAX_JOBS + 1}"}, "jobs"),
        ("recommendations/split", {"jobs": "0-3"}, "jobs"),
        ("recommendations/split", {"jobs": "9" * 400}, "jobs"),
        ("recommendations/machines", {"split_jobs": "2-100000"}, "split_jobs"),
        ("recommendations/split", {"overhead": "99999h"}, "overhead"),
        ("recommendations/split", {"budget": "1" * 400}, "budget"),
        ("recommendations/split", {"wait_target": "soon"}, "wait_target"),
        ("recommendations/matrix", {"threshold": "inf"}, "threshold"),
        ("recommendations/matrix", {"threshold": "nan"}, "threshold"),
        ("recommendations/parametrize", {"top": "101"}, "top"),
        ("recommendations/parametrize", {"strength": "3"}, "strength"),
        ("shards", {"total": "1001"}, "total"),
        ("shards", {"total": "2", "index": "3"}, "index"),
        ("shards", {"total": "2", "index": str(10**30)}, "index"),
        ("rollups", {"limit": "100001"}, "limit"),
        ("pipelines", {"limit": "0"}, "limit"),
        ("uploads", {"limit": "1001"}, "limit"),
    ],
)
def test_size_parameters_beyond_their_cap_answer_422_naming_them(
    live_server: LiveServer, small: ProjectFixture, path: str, params: dict[str, str], named: str
) -> None:
    assert named in named_params(get(live_server, small, path, params))


def test_job_range_at_the_cap_answers(live_server: LiveServer, small: ProjectFixture) -> None:
    response = get(live_server, small, "recommendations/split", {"jobs": f"1-{MAX_JOBS}"})
    assert response.status_code == 200, response.text
    plan = response.json()
    assert plan["complete"] is True
    assert [row["jobs"] for row in plan["pareto"]] == list(range(1, MAX_JOBS + 1))


NUL = "\x00"


@pytest.mark.parametrize(
    ("path", "params", "named"),
    [
        ("trend", {"branch": NUL}, "branch"),
        ("trend", {"job": NUL}, "job"),
        ("trend", {"label": f"a={NUL}"}, "label"),
        ("trend", {"label": f"{NUL}=a"}, "label"),
        ("rollups", {"marker": NUL}, "marker"),
        ("rollups", {"exclude_marker": NUL}, "exclude_marker"),
        ("rollups", {"file": f"tests/{NUL}*.py"}, "file"),
        ("rollups", {"by": NUL}, "by"),
        ("rollups", {"within": NUL}, "within"),
        ("rollups", {"sort": NUL}, "sort"),
        ("recommendations/split", {"cell": NUL}, "cell"),
        ("recommendations/split", {"jobs": NUL}, "jobs"),
        ("recommendations/split", {"overhead": NUL}, "overhead"),
        ("trend", {"since": NUL}, "since"),
        ("trend", {"until": f"2026-01-01{NUL}"}, "until"),
        ("jobs", {"branch": ["main", NUL]}, "branch"),
    ],
)
def test_nul_bytes_in_any_filter_answer_422_naming_it(
    live_server: LiveServer, small: ProjectFixture, path: str, params: dict[str, Any], named: str
) -> None:
    assert named in named_params(get(live_server, small, path, params))


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"until": "0001-01-01"}, "until"),
        ({"since": "0001-01-01"}, "since"),
        ({"until": "9999-12-31"}, "until"),
        ({"since": "9999-12-31"}, "since"),
        ({"until": "1900-01-01", "days": "3650"}, "until"),
    ],
)
def test_out_of_range_dates_answer_422(
    live_server: LiveServer, small: ProjectFixture, params: dict[str, str], named: str
) -> None:
    for path in ("trend", "rollups", "recommendations/split"):
        assert named in named_params(get(live_server, small, path, params)), path


def test_in_range_filters_still_answer(live_server: LiveServer, small: ProjectFixture) -> None:
    today = datetime.now(UTC).date().isoformat()
    params = {"until": today, "days": "3650", "label": "os=linux", "file": "tests/*", "job": "a"}
    response = get(live_server, small, "rollups", params)
    assert response.status_code == 200, response.text
    assert response.json()["grand_total_s"] == pytest.approx(sum(5.0 + i for i in range(6)))


def test_catalogue_with_a_nul_name_is_refused(
    live_server: LiveServer, small: ProjectFixture
) -> None:
    response = httpx.put(
        f"{live_server.url}/api/v1/projects/{small.slug}/catalogue",
        json={"toml": 'name = "x\\u0000y"\n'},
        headers={"Authorization": f"Bearer {small.admin_token}"},
        timeout=30,
    )
    assert response.status_code == 422, response.text


def raw_request(server: LiveServer, request: bytes) -> bytes:
    """Send bytes over a socket and read the answer (httpx would refuse a header this big)."""
    parts = urlsplit(server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(request)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_one_megabyte_header_answers_431(live_server: LiveServer) -> None:
    big = b"x" * (1024 * 1024)
    answer = raw_request(
        live_server,
        b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: " + big + b"\r\n\r\n",
    )
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
    # And the server still answers ordinary requests afterwards.
    assert httpx.get(f"{live_server.url}/healthz", timeout=10).status_code == 200


def test_many_small_headers_past_the_total_answer_431(live_server: LiveServer) -> None:
    headers = b"".join(b"X-H%d: %s\r\n" % (i, b"y" * 1000) for i in range(100))
    answer = raw_request(
        live_server, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n" + headers + b"\r\n"
    )
    assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]


def test_a_nul_byte_in_the_slug_answers_4xx(live_server: LiveServer, small: ProjectFixture) -> None:
    response = httpx.get(
        f"{live_server.url}/api/v1/projects/a%00b/trend",
        headers={"Authorization": f"Bearer {small.read_token}"},
        timeout=30,
    )
    assert 400 <= response.status_code < 500, response.text
