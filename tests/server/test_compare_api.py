"""GET /compare over a live server: numbers equal a recomputation from the uploaded reports."""

from __future__ import annotations

import statistics

import httpx

from tests.conftest import LiveServer, ProjectFixture
from tests.factories import junit_total_seconds, junit_xml
from tests.uploads import upload_all


def test_compare_against_base_runs(live_server: LiveServer, project: ProjectFixture) -> None:
    base = [junit_xml(6, seed=s) for s in range(4)]
    head = junit_xml(6, seed=99, failures=1)
    uploads = [
        ("r.xml", body, {"pipeline": f"base-{i}", "branch": "main", "commit": f"{i:040x}"})
        for i, body in enumerate(base)
    ]
    uploads.append(("r.xml", head, {"pipeline": "pr-1", "branch": "feature", "commit": "f" * 40}))
    upload_all(live_server, project.upload_token, uploads)
    url = f"{live_server.url}/api/v1/projects/{project.slug}/compare"
    auth = {"Authorization": f"Bearer {project.read_token}"}
    response = httpx.get(url, params={"pipeline": "pr-1", "base": "main"}, headers=auth)
    answer = response.json()
    assert response.status_code == 200, answer
    assert answer["base_runs"] == 4
    times = [junit_total_seconds(b) for b in base]
    assert abs(answer["test_time"]["base_median"] - statistics.median(times)) < 1e-6
    assert abs(answer["test_time"]["here"] - junit_total_seconds(head)) < 1e-6
    assert len(answer["new_failures"]) == 1, answer
    unknown = httpx.get(url, params={"pipeline": "nope"}, headers=auth)
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "pipeline-unknown"
    nobase = httpx.get(url, params={"pipeline": "pr-1", "base": "dev"}, headers=auth)
    assert nobase.status_code == 422
