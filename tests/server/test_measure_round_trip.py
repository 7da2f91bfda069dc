"""The job model's measures travel end to end: a real plugin report, uploaded by the CI
client with the job's wall, lands in the run and test_result columns and in the frames the
planner reads, with the same sums as the JSON; a JUnit upload beside it reads as unknown.
The heap measures (gc_s, heap_scans, heap_objects; the session's heap_objects_*) and the
run-queue wait (cpu_wait_s per test and per session) and the allocator state (the session's
malloc, a string) likewise."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, text

from analysis.filters import Filters
from app.db.projects import get_project
from app.services.recommendations import load_history
from ingest.parsers.laptime_json_schema import MALLOC_STATES
from laptime_ci.upload import metadata_from_env, upload_reports
from tests.conftest import LiveServer, ProjectFixture
from tests.server.test_upload_flow import upload, wait_done

SUITE = """
import gc
import time


class TestA:
    def test_one(self):
        sum(range(200_000))

    def test_two(self):
        time.sleep(0.01)


def test_three():
    pass


def test_walks_the_heap():
    gc.collect()
    assert gc.get_objects()
"""
HEAP_RESULTS = ("gc_s", "heap_scans", "heap_objects")
HEAP_RUNS = ("heap_objects_start", "heap_objects_collected", "heap_objects_end")
# Per test, stored on test_result and carried into the results frame (float64, NaN unknown).
RESULT_MEASURES = (*HEAP_RESULTS, "cpu_wait_s")


def with_heap_measures(data: bytes) -> bytes:
    """The report with the heap measures a plugin that walks the heap writes:
    the plugin's own where it wrote them, else values of that shape, so the storage path is
    checked whichever plugin made the report."""
    doc = json.loads(data)
    for key, value in zip(HEAP_RUNS, (41_000, 150_000, 420_000), strict=True):
        doc["session"].setdefault(key, value)
    for test in doc["tests"]:
        walks = test["nodeid"].endswith("test_walks_the_heap")
        test.setdefault("gc_s", 0.0123 if walks else 0.0)
        test.setdefault("heap_scans", 1 if walks else 0)
        test.setdefault("heap_objects", 150_321 if walks else None)
    return json.dumps(doc).encode()


def with_wait_measures(data: bytes) -> bytes:
    """The report with the run-queue waits a plugin on Linux writes (cpu_wait_s):
    the plugin's own where it wrote them, else values of that shape with one unknown (null, as
    where the kernel does not say), so the storage path is checked whichever plugin made it."""
    doc = json.loads(data)
    doc["session"].setdefault("cpu_wait_s", 0.375)
    for index, test in enumerate(doc["tests"]):
        unknown = test["nodeid"].endswith("test_three")
        test.setdefault("cpu_wait_s", None if unknown else 0.0025 * (index + 1))
    return json.dumps(doc).encode()


def with_malloc_state(data: bytes) -> bytes:
    """The report with the allocator state a plugin on glibc writes by default: the plugin's
    own where it wrote it, else "pinned", so the storage path is checked either way."""
    doc = json.loads(data)
    doc["session"].setdefault("malloc", "pinned")
    return json.dumps(doc).encode()


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
    data = with_malloc_state(with_wait_measures(with_heap_measures(plugin_report(tmp_path))))
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
                    "collected_files, collect_by_file, invocation, heap_objects_start, "
                    "heap_objects_collected, heap_objects_end, cpu_wait_s, malloc, platform "
                    "FROM run WHERE id = :r"
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
        measure_rows = conn.execute(
            text(
                "SELECT tc.nodeid, tr.gc_s, tr.heap_scans, tr.heap_objects, tr.cpu_wait_s "
                "FROM test_result tr JOIN test_case tc ON tc.id = tr.test_id WHERE tr.run_id = :r"
            ),
            {"r": done["run_id"]},
        ).all()
        stored = get_project(conn, project.slug)
        assert stored is not None
        history = load_history(conn, stored, Filters())

    for key in ("cpu_s", "startup_s", "collect_s", "collected_tests", "collected_files"):
        assert run[key] == session[key], key
    for key in (*HEAP_RUNS, "cpu_wait_s"):
        assert run[key] == session[key], key
    assert run["collect_by_file"] == session["collect_by_file"] == run["collect_by_file"]
    assert set(run["collect_by_file"]) == {"test_rt.py"}
    assert run["invocation"] == "paths"
    assert run["malloc"] == session["malloc"]
    assert run["platform"] == session["platform"] == platform.platform()
    assert session["malloc"] in MALLOC_STATES
    assert run["job_wall_s"] == metadata.job_wall_s  # the client's, over the report's null
    # Differential: the database holds what the JSON said, test by test.
    tests = doc["tests"]
    # Postgres and Python add the same values in different orders: equal to the last bit or two.
    assert math.isclose(sums[0], sum(t["cpu_s"] for t in tests), rel_tol=1e-12)
    assert (sums[1], sums[2]) == (sum(t["seq"] for t in tests), 4) == (6, 4)
    by_nodeid = {t["nodeid"]: t for t in tests}
    stored_measures = {nodeid: tuple(values) for nodeid, *values in measure_rows}
    sent = {nodeid: tuple(t[k] for k in RESULT_MEASURES) for nodeid, t in by_nodeid.items()}
    assert stored_measures == sent

    runs = history.runs.set_index("job")
    results = history.results
    plugin_run, junit_run = runs.loc["unit"], runs.loc["junit-only"]
    assert plugin_run["cpu_s"] == session["cpu_s"]
    assert plugin_run["collected_tests"] == 4.0
    for key in (*HEAP_RUNS, "cpu_wait_s"):
        assert plugin_run[key] == session[key], key
    assert plugin_run["collect_by_file"] == session["collect_by_file"]
    assert plugin_run["job_wall_s"] == metadata.job_wall_s
    assert plugin_run["malloc"] == session["malloc"]
    mine = results[results["run_id"] == plugin_run["run_id"]]
    assert math.isclose(mine["cpu_s"].sum(), sums[0], rel_tol=1e-12)
    assert sorted(mine["seq"]) == [0.0, 1.0, 2.0, 3.0]
    # The planner's frames: the JSON's values as float64, null as NaN (never 0).
    frame_rows = mine.set_index("nodeid")
    for nodeid, test in by_nodeid.items():
        row = frame_rows.loc[nodeid]
        for key in RESULT_MEASURES:
            want = test[key]
            assert math.isnan(row[key]) if want is None else row[key] == want, (nodeid, key)
    assert mine[list(RESULT_MEASURES)].dtypes.eq("float64").all()
    assert mine["heap_objects"].notna().any()
    assert mine["cpu_wait_s"].notna().any()
    # JUnit-only data: unknown, never zero.
    unknown_runs = (
        "cpu_s",
        "startup_s",
        "collect_s",
        "job_wall_s",
        "collected_tests",
        "cpu_wait_s",
    )
    for key in (*unknown_runs, *HEAP_RUNS):
        assert math.isnan(junit_run[key]), key
    junit_rows = history.runs[history.runs["job"] == "junit-only"]
    assert junit_rows["collect_by_file"].tolist() == [None]
    assert junit_rows["invocation"].tolist() == [None]
    assert junit_rows["malloc"].tolist() == [None]
    theirs = results[results["run_id"] == junit_run["run_id"]]
    assert theirs[["cpu_s", "seq", *RESULT_MEASURES]].isna().all().all()


def test_the_upload_refuses_a_job_wall_beyond_a_week(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    junit = b'<testsuite><testcase classname="j" name="t" time="2.0"/></testsuite>'
    for bad in ("-1", "nan", str(8 * 24 * 3600)):
        answer = upload(live_server, project.upload_token, [("j.xml", junit)], job_wall_s=bad)
        assert answer.status_code == 422, (bad, answer.text)
        assert answer.json()["detail"][0]["loc"][-1] == "job_wall_s"
