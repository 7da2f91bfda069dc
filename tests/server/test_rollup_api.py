"""Rollup, pipeline and recommendation endpoints over HTTP on hand-built data."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import httpx
import pytest

from tests.conftest import LiveServer, ProjectFixture
from tests.server.test_upload_flow import upload, wait_done


def junit(cases: list[tuple[str, str, float, str]]) -> bytes:
    """(classname, name, seconds, outcome) -> a pytest-style xunit2 report."""
    body = []
    for classname, name, seconds, outcome in cases:
        inner = '<failure message="x">boom</failure>' if outcome == "failed" else ""
        body.append(
            f'<testcase classname="{classname}" name="{name}" time="{seconds}">{inner}</testcase>'
        )
    return (
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        + "".join(body)
        + "</testsuite></testsuites>"
    ).encode()


@pytest.fixture(scope="module")
def loaded(live_server: LiveServer, engine) -> ProjectFixture:  # type: ignore[no-untyped-def]
    from tests.conftest import make_project

    project = make_project(engine)
    today = datetime.now(UTC).replace(hour=9, minute=0, second=0, microsecond=0).isoformat()
    linux = junit(
        [
            ("tests.test_models", "test_resnet[a]", 30.0, "passed"),
            ("tests.test_models", "test_resnet[b]", 10.0, "passed"),
            ("tests.test_io", "test_read", 10.0, "failed"),
        ]
    )
    macos = junit(
        [
            ("tests.test_models", "test_resnet[a]", 20.0, "passed"),
            ("tests.test_io", "test_read", 30.0, "passed"),
        ]
    )
    ids = []
    for job, body, os_name, wall in (("linux", linux, "linux", 80), ("macos", macos, "macos", 100)):
        response = upload(
            live_server,
            project.upload_token,
            [(f"{job}.xml", body)],
            job=job,
            pipeline="pipe-1",
            label=[f"os={os_name}"],
            wall_s=str(wall),
            started_at=today,
        )
        assert response.status_code == 202, response.text
        ids.append(response.json()["id"])
    for upload_id in ids:
        assert wait_done(live_server, project.upload_token, upload_id)["status"] == "done"
    return project


def get(server: LiveServer, project: ProjectFixture, path: str, **params: object) -> httpx.Response:
    return httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/{path}",
        params=params,  # type: ignore[arg-type]
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    )


def test_rollup_by_file_shares(live_server: LiveServer, loaded: ProjectFixture) -> None:
    response = get(live_server, loaded, "rollups", by="file")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["grand_total_s"] == pytest.approx(100.0)
    rows = {r["key"]: r for r in body["rows"]}
    assert rows["tests/test_models.py"]["total_s"] == pytest.approx(60.0)
    assert rows["tests/test_models.py"]["share"] == pytest.approx(0.6)
    assert rows["tests/test_io.py"]["failures"] == 1
    assert rows["tests/test_models.py"]["runs"] == 3
    # test_models.py spends most in linux (40 of linux's 50 s).
    assert rows["tests/test_models.py"]["parent"] == "linux"
    assert rows["tests/test_models.py"]["parent_share"] == pytest.approx(0.8)


def test_rollup_by_function_strips_params(live_server: LiveServer, loaded: ProjectFixture) -> None:
    rows = get(live_server, loaded, "rollups", by="function").json()["rows"]
    resnet = next(r for r in rows if r["key"].endswith("test_resnet"))
    assert resnet["total_s"] == pytest.approx(60.0)
    assert resnet["tests"] == 2
    assert resnet["parent_share"] == pytest.approx(1.0)


def test_rollup_filters_and_csv(live_server: LiveServer, loaded: ProjectFixture) -> None:
    linux = get(live_server, loaded, "rollups", by="file", label="os=linux").json()
    assert linux["grand_total_s"] == pytest.approx(50.0)
    by_label = {
        r["key"]: r["total_s"]
        for r in get(live_server, loaded, "rollups", by="label:os").json()["rows"]
    }
    assert by_label == {"linux": pytest.approx(50.0), "macos": pytest.approx(50.0)}
    glob = get(live_server, loaded, "rollups", by="test", file="tests/test_io*").json()
    assert {r["key"] for r in glob["rows"]} == {"tests/test_io.py::test_read"}
    text = get(live_server, loaded, "rollups", by="job", format="csv").text
    table = list(csv.DictReader(io.StringIO(text)))
    assert {row["key"] for row in table} == {"linux", "macos"}
    bad = get(live_server, loaded, "rollups", by="colour")
    assert bad.status_code == 422


def test_pipeline_wait_and_machine_time(live_server: LiveServer, loaded: ProjectFixture) -> None:
    body = get(live_server, loaded, "pipelines").json()
    (pipe,) = [p for p in body["pipelines"] if p["pipeline"] == "pipe-1"]
    assert pipe["wait_s"] == pytest.approx(100.0)
    assert pipe["machine_s"] == pytest.approx(180.0)
    assert pipe["critical_job"] == "macos"
    jobs = {j["job"]: j for j in get(live_server, loaded, "jobs").json()["jobs"]}
    assert set(jobs) == {"linux", "macos"}


def test_recommendation_endpoints_answer(live_server: LiveServer, loaded: ProjectFixture) -> None:
    split = get(live_server, loaded, "recommendations/split", jobs="2", cell="os=linux")
    assert split.status_code == 200, split.text
    plan = split.json()
    assert plan["cell"] == "os=linux"
    assert {"jobs", "before", "after", "verdict"} <= set(plan)
    # Linux runs 50 s of tests in an 80 s job: 30 s of setup per extra job is not worth it.
    assert plan["before"]["wait_s"] == pytest.approx(80.0)
    assert plan["verdict"] in {"keep", "not_worth_it"}, plan["reason"]
    cheap = get(
        live_server, loaded, "recommendations/split", jobs="2", cell="os=linux", overhead="0s"
    ).json()
    assert cheap["verdict"] == "split", cheap["reason"]
    assert sorted(m for job in cheap["jobs"] for m in job["members"])
    shards = get(live_server, loaded, "shards", total=2).json()["shards"]
    assert len(shards) == 2
    nodeids = [n for s in shards for n in s["nodeids"]]
    assert sorted(nodeids) == sorted(set(nodeids))
    assert len(nodeids) == 3
    assert get(live_server, loaded, "recommendations/matrix").status_code == 200
    assert get(live_server, loaded, "recommendations/parametrize").status_code == 200


def test_machine_sizing_and_catalogue(live_server: LiveServer, loaded: ProjectFixture) -> None:
    # The loaded runs carry no machine type: sizing says so instead of inventing a price.
    missing = get(live_server, loaded, "recommendations/machines", cell="os=linux")
    assert missing.status_code == 422
    assert "catalogue" in missing.json()["detail"]
    url = f"{live_server.url}/api/v1/projects/{loaded.slug}/catalogue"
    bad = httpx.put(
        url,
        json={"toml": "name = 'mine'\n[[machine]]\nname = 'x'\n"},
        headers={"Authorization": f"Bearer {loaded.admin_token}"},
    )
    assert bad.status_code == 422
    refused = httpx.put(
        url, json={"name": "circleci"}, headers={"Authorization": f"Bearer {loaded.read_token}"}
    )
    assert refused.status_code == 403
    ok = httpx.put(
        url, json={"name": "circleci"}, headers={"Authorization": f"Bearer {loaded.admin_token}"}
    )
    assert ok.status_code == 200, ok.text
    shown = get(live_server, loaded, "catalogue").json()
    assert shown["name"] == "circleci"
    assert shown["catalogue"]["name"] == "circleci"
    sized = get(live_server, loaded, "recommendations/machines", cell="os=linux")
    assert sized.status_code == 200, sized.text
    today = sized.json()["today"]
    assert today["catalogue"] == "circleci"
    assert len(today["jobs"]) == 1
