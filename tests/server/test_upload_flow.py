"""Upload -> worker -> rows through a real uvicorn server, tokens, repeats and concurrency."""

from __future__ import annotations

import gzip
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, text

from tests.conftest import LiveServer, ProjectFixture
from tests.factories import junit_total_seconds, junit_xml


def upload(
    server: LiveServer,
    token: str,
    files: list[tuple[str, bytes]],
    **fields: Any,
) -> httpx.Response:
    data: dict[str, Any] = {"job": "unit", **fields}
    return httpx.post(
        f"{server.url}/api/v1/uploads",
        headers={"Authorization": f"Bearer {token}"},
        files=[("file", (name, body)) for name, body in files],
        data=data,
        timeout=60,
    )


def wait_done(
    server: LiveServer, token: str, upload_id: int, timeout_s: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        doc: dict[str, Any] = httpx.get(
            f"{server.url}/api/v1/uploads/{upload_id}",
            headers={"Authorization": f"Bearer {token}"},
        ).json()
        if doc["status"] in ("done", "failed"):
            return doc
        if time.monotonic() > deadline:
            raise AssertionError(f"upload {upload_id} still {doc['status']}")
        time.sleep(0.1)  # polling a queue, not timing anything


def result_count(engine: Engine, project_id: int) -> tuple[int, float]:
    with engine.connect() as conn:
        row = conn.execute(
            text(
                "SELECT count(*), coalesce(sum(duration_s), 0) FROM test_result "
                "WHERE project_id = :p"
            ),
            {"p": project_id},
        ).one()
    return int(row[0]), float(row[1])


def test_upload_is_ingested_with_exact_counts(
    live_server: LiveServer, engine: Engine, project: ProjectFixture
) -> None:
    report = junit_xml(250, failures=3, seed=1)
    response = upload(
        live_server,
        project.upload_token,
        [("report.xml.gz", gzip.compress(report))],
        pipeline="p1",
        label=["os=linux", "python=3.11"],
        wall_s="300",
        machine="large",
    )
    assert response.status_code == 202, response.text
    body = response.json()
    assert body["status"] == "queued"
    assert body["url"] == f"/api/v1/uploads/{body['id']}"
    doc = wait_done(live_server, project.upload_token, body["id"])
    assert doc["status"] == "done", doc
    assert doc["counts"]["results"] == 250
    count, total = result_count(engine, project.id)
    assert count == 250
    assert total == pytest.approx(junit_total_seconds(report), rel=1e-6)
    with engine.connect() as conn:
        run = conn.execute(
            text(
                "SELECT job, pipeline, machine, labels_key, wall_s FROM run WHERE project_id = :p"
            ),
            {"p": project.id},
        ).one()
    assert run == ("unit", "p1", "large", "os=linux,python=3.11", 300.0)


def test_repeated_upload_counts_once(
    live_server: LiveServer, engine: Engine, project: ProjectFixture
) -> None:
    report = junit_xml(40, seed=2)
    first = upload(live_server, project.upload_token, [("r.xml", report)])
    second = upload(live_server, project.upload_token, [("r.xml", gzip.compress(report))])
    assert first.status_code == 202
    assert second.status_code == 200
    assert second.json()["id"] == first.json()["id"]
    assert second.json()["duplicate"] is True
    keyed = upload(
        live_server, project.upload_token, [("s.xml", junit_xml(5, seed=9))], idempotency_key="k1"
    )
    again = upload(
        live_server, project.upload_token, [("s.xml", junit_xml(6, seed=10))], idempotency_key="k1"
    )
    assert again.json()["id"] == keyed.json()["id"]
    wait_done(live_server, project.upload_token, first.json()["id"])
    wait_done(live_server, project.upload_token, keyed.json()["id"])
    assert result_count(engine, project.id)[0] == 45


def test_eight_parallel_uploaders_count_exactly(
    live_server: LiveServer, engine: Engine, project: ProjectFixture
) -> None:
    reports = [junit_xml(120, seed=100 + i, prefix=f"tests/t{i}_") for i in range(8)]

    def send(i: int) -> int:
        # Every uploader sends its own report twice, racing the other seven.
        a = upload(live_server, project.upload_token, [("r.xml", reports[i])], job=f"job{i}")
        b = upload(live_server, project.upload_token, [("r.xml", reports[i])], job=f"job{i}")
        assert a.json()["id"] == b.json()["id"]
        return int(a.json()["id"])

    with ThreadPoolExecutor(max_workers=8) as pool:
        ids = list(pool.map(send, range(8)))
    assert len(set(ids)) == 8
    for upload_id in ids:
        assert wait_done(live_server, project.upload_token, upload_id)["status"] == "done"
    count, total = result_count(engine, project.id)
    assert count == 8 * 120
    assert total == pytest.approx(sum(junit_total_seconds(r) for r in reports), rel=1e-6)


def test_tokens_are_checked(
    live_server: LiveServer, engine: Engine, project: ProjectFixture
) -> None:
    from tests.conftest import make_project

    other = make_project(engine)
    report = [("r.xml", junit_xml(3))]
    assert upload(live_server, "lt_upload_nope", report).status_code == 401
    missing = httpx.post(f"{live_server.url}/api/v1/uploads", files=[("file", ("r.xml", b"x"))])
    assert missing.status_code == 401
    assert upload(live_server, project.read_token, report).status_code == 403
    url = f"{live_server.url}/api/v1/projects/{project.slug}/rollups"
    assert httpx.get(url).status_code == 401
    assert (
        httpx.get(url, headers={"Authorization": f"Bearer {other.read_token}"}).status_code == 403
    )
    assert (
        httpx.get(url, headers={"Authorization": f"Bearer {project.upload_token}"}).status_code
        == 403
    )
    ok = httpx.get(url, headers={"Authorization": f"Bearer {project.read_token}"})
    assert ok.status_code == 200, ok.text
