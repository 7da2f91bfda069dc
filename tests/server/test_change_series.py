"""A change's series around its step, over a live server: REST `GET .../changes/{id}/series`
and the change page's figure, with the step marked between the right runs. Each point is
checked against the uploaded reports read independently, and the medians of the points the
change was measured on against the change's own medians."""

from __future__ import annotations

import json
import random
import re
import statistics
from datetime import datetime

import httpx
import lxml.html  # type: ignore[import-untyped]
import pytest

from tests.changes_history import RUNS, SLOW, STEP_AT, commit_of, step_report, upload_step_history
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.pages.conftest import sign_in_form


@pytest.fixture(scope="module")
def stepped(live_server: LiveServer, engine: object) -> ProjectFixture:
    project = make_project(engine)  # type: ignore[arg-type]
    upload_step_history(live_server, project)
    return project


def _api(server: LiveServer, project: ProjectFixture, path: str) -> httpx.Response:
    return httpx.get(
        f"{server.url}/api/v1/projects/{project.slug}/{path}",
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=60,
    )


def _slow_times() -> list[float]:
    """test_slow's time in each main run, read from the reports as they were uploaded."""
    rng = random.Random(7)
    times = []
    for i in range(RUNS):
        report = step_report(i, rng).decode()
        times.append(float(re.search(r'name="test_slow" time="([0-9.]+)"', report).group(1)))  # type: ignore[union-attr]
    return times


def test_rest_series_is_the_uploaded_runs_split_at_the_step(
    live_server: LiveServer, stepped: ProjectFixture
) -> None:
    changes = _api(live_server, stepped, "changes").json()["changes"]
    change = next(c for c in changes if c["kind"] == "test")
    response = _api(live_server, stepped, f"changes/{change['id']}/series")
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["change"] == change
    points = answer["points"]
    assert [p["commit"] for p in points] == [commit_of(i) for i in range(RUNS)]
    assert [p["after"] for p in points] == [i >= STEP_AT for i in range(RUNS)]
    assert [p["duration_s"] for p in points] == pytest.approx(_slow_times(), abs=1e-6)
    before = [p["duration_s"] for p in points if not p["after"]]
    after = [p["duration_s"] for p in points if p["after"]]
    assert statistics.median(before[-change["runs_before"] :]) == pytest.approx(
        change["median_before_s"]
    )
    assert statistics.median(after[: change["runs_after"]]) == pytest.approx(
        change["median_after_s"]
    )
    # The file's series sums its tests: here test_slow is the file's only test.
    file_change = next(c for c in changes if c["kind"] == "file")
    file_points = _api(live_server, stepped, f"changes/{file_change['id']}/series").json()
    assert [p["duration_s"] for p in file_points["points"]] == pytest.approx(
        [p["duration_s"] for p in points]
    )
    missing = _api(live_server, stepped, "changes/999999/series")
    assert missing.status_code == 404
    assert missing.json()["code"] == "change-not-found"


def test_the_change_page_marks_the_step_between_the_last_run_before_and_the_first_after(
    live_server: LiveServer, stepped: ProjectFixture
) -> None:
    changes = _api(live_server, stepped, "changes").json()["changes"]
    change = next(c for c in changes if c["kind"] == "test")
    points = _api(live_server, stepped, f"changes/{change['id']}/series").json()["points"]
    with httpx.Client(base_url=live_server.url, timeout=60) as client:
        fields = sign_in_form(client)
        client.post("/signin", data={**fields, "token": stepped.read_token})
        listed = lxml.html.fromstring(client.get(f"/p/{stepped.slug}/changes").text)
        link = listed.cssselect(f"#change-{change['id']} td a")[0].get("href")
        response = client.get(link)
        assert response.status_code == 200, response.text[:300]
        doc = lxml.html.fromstring(response.text)
        assert doc.cssselect(f"#changes tr[data-change='{change['id']}']")
        figure = json.loads(doc.cssselect("script[data-figure=fig-step]")[0].text)
        assert client.get(f"/p/{stepped.slug}/changes/999999").status_code == 404
    (step,) = [s for s in figure["layout"]["shapes"] if s.get("name") == "step"]
    last_before = datetime.fromisoformat(points[STEP_AT - 1]["started_at"]).replace(tzinfo=None)
    first_after = datetime.fromisoformat(points[STEP_AT]["started_at"]).replace(tzinfo=None)
    assert last_before <= datetime.fromisoformat(step["x0"]).replace(tzinfo=None) <= first_after
    drawn = {t["name"]: len(t["x"]) for t in figure["data"]}
    assert drawn == {"runs before": STEP_AT, "runs after": RUNS - STEP_AT}
    medians = sorted(s["y0"] for s in figure["layout"]["shapes"] if s.get("name") == "median")
    assert medians == pytest.approx(sorted([change["median_before_s"], change["median_after_s"]]))
    assert SLOW in response.text
