"""The job model's measures (#18) travel end to end: a real plugin report, uploaded by the CI
client with the job's wall, lands in the run and test_result columns and in the frames the
planner reads, with the same sums as the JSON; a JUnit upload beside it reads as unknown."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from analysis.filters import Filters
from app.db.projects import get_project
from app.services.recommendations import load_history
from laptime_ci.upload import metadata_from_env, upload_reports
from tests.conftest import LiveServer, ProjectFixture
from tests.server.test_upload_flow import upload, wait_done

SUITE = """
import time


class TestA:
    def test_one(self):
        sum(range(200_000))

    def test_two(self):
        time.sleep(0.01)


def test_three():
    pass
"""


def plugin_report(path: Path) -> bytes:
    (path / "test_rt.py").write_text(SUITE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("LAPTIME_")}
    plugins_off = ["-p", "no:xdist", "-p", "no:randomly", "-p", "no:cacheprovider"]
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *plugins_off, "--laptime-report=r.json"],
        cwd=path,
        env=env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return (path / "r.json").read_bytes()


def test_plugin_measures_round_trip_to_the_planner_frames(
    live_server: LiveServer, project: ProjectFixture, engine: Engine, tmp_path: Path
) -> None:
    data = plugin_report(tmp_path)
    doc: dict[str, Any] = json.loads(data)
    session = doc["session"]
    # The client sends the job's wall from an early CI step's LAPTIME_JOB_STARTED_AT.
    env = {"LAPTIME_JOB_STARTED_AT": str(time.time() - 120), "LAPTIME_JOB": "unit"}
    metadata = metadata_from_env(env)
    assert metadata.job_wall_s is not None
    assert 120 <= metadata.job_wall_s < 180
    answer = upload_reports(
        [("r.json", data)], url=live_server.url, token=project.upload_token, metadata=metadata
    )
    done = wait_done(live_server, project.upload_token, int(answer["id"]))
    assert done["status"] == "done", done
    junit = b'<testsuite><testcase classname="j" name="t" time="2.0"/></testsuite>'
    other = upload(live_server, project.upload_token, [("j.xml", junit)], job="junit-only")
    assert wait_done(live_server, project.upload_token, other.json()["id"])["status"] == "done"

    with engine.connect() as conn:
        run = (
            conn.execute(
                text(
                    "SELECT cpu_s, startup_s, collect_s, job_wall_s, collected_tests, "
                    "collected_files, collect_by_file, invocation FROM run WHERE id = :r"
                ),
                {"r": done["run_id"]},
            )
            .mappings()
            .one()
        )
        sums = conn.execute(
            text("SELECT sum(cpu_s), sum(seq), count(seq) FROM test_result WHERE run_id = :r"),
            {"r": done["run_id"]},
        ).one()
        stored = get_project(conn, project.slug)
        assert stored is not None
        history = load_history(conn, stored, Filters())

    for key in ("cpu_s", "startup_s", "collect_s", "collected_tests", "collected_files"):
        assert run[key] == session[key], key
    assert run["collect_by_file"] == session["collect_by_file"] == run["collect_by_file"]
    assert set(run["collect_by_file"]) == {"test_rt.py"}
    assert run["invocation"] == "paths"
    assert run["job_wall_s"] == metadata.job_wall_s  # the client's, over the report's null
    # Differential: the database holds what the JSON said, test by test.
    tests = doc["tests"]
    # Postgres and Python add the same values in different orders: equal to the last bit or two.
    assert math.isclose(sums[0], sum(t["cpu_s"] for t in tests), rel_tol=1e-12)
    assert (sums[1], sums[2]) == (sum(t["seq"] for t in tests), 3) == (3, 3)

    runs = history.runs.set_index("job")
    results = history.results
    plugin_run, junit_run = runs.loc["unit"], runs.loc["junit-only"]
    assert plugin_run["cpu_s"] == session["cpu_s"]
    assert plugin_run["collected_tests"] == 3.0
    assert plugin_run["collect_by_file"] == session["collect_by_file"]
    assert plugin_run["job_wall_s"] == metadata.job_wall_s
    mine = results[results["run_id"] == plugin_run["run_id"]]
    assert math.isclose(mine["cpu_s"].sum(), sums[0], rel_tol=1e-12)
    assert sorted(mine["seq"]) == [0.0, 1.0, 2.0]
    # JUnit-only data: unknown, never zero.
    for key in ("cpu_s", "startup_s", "collect_s", "job_wall_s", "collected_tests"):
        assert math.isnan(junit_run[key]), key
    junit_rows = history.runs[history.runs["job"] == "junit-only"]
    assert junit_rows["collect_by_file"].tolist() == [None]
    assert junit_rows["invocation"].tolist() == [None]
    theirs = results[results["run_id"] == junit_run["run_id"]]
    assert theirs[["cpu_s", "seq"]].isna().all().all()


def test_the_upload_refuses_a_job_wall_beyond_a_week(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    junit = b'<testsuite><testcase classname="j" name="t" time="2.0"/></testsuite>'
    for bad in ("-1", "nan", str(8 * 24 * 3600)):
        answer = upload(live_server, project.upload_token, [("j.xml", junit)], job_wall_s=bad)
        assert answer.status_code == 422, (bad, answer.text)
        assert answer.json()["detail"][0]["loc"][-1] == "job_wall_s"
