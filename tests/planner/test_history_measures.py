"""`laptime plan --history a.json b.json` builds its frames from local files (load_local): the
heap measures and the run-queue wait (cpu_wait_s) of laptime JSON reach them as float64, NaN where
a report did not say (an older plugin, a bad value, a JUnit file), never 0. The allocator
state (malloc) reaches the runs frame as a string, None where a report did not say."""

from __future__ import annotations

import json
import math
from pathlib import Path

from click.testing import CliRunner

from app.cli.local_reports import load_local
from app.cli.main import cli
from ingest.parsers.laptime_json_schema import MALLOC_STATES
from tests.parsers.test_laptime_json import SESSION, TEST, document

HEAP_RESULTS = ("gc_s", "heap_scans", "heap_objects")
HEAP_RUNS = ("heap_objects_start", "heap_objects_collected", "heap_objects_end")


def test_local_reports_carry_the_heap_measures_into_the_frames(tmp_path: Path) -> None:
    quiet = dict(TEST, nodeid="t.py::quiet", gc_s=0.0, heap_scans=0, heap_objects=None)
    first = document(dict(TEST, nodeid="t.py::walks"), quiet)
    older = document(dict(TEST, nodeid="t.py::walks", gc_s="slow"), quiet)
    del older["session"]["heap_objects_end"]
    for test in older["tests"]:
        del test["heap_objects"]
    junit = b'<testsuite><testcase classname="t" name="walks" file="t.py" time="1.0"/></testsuite>'
    paths = [tmp_path / "a.json", tmp_path / "b.json", tmp_path / "c.xml"]
    paths[0].write_text(json.dumps(first))
    paths[1].write_text(json.dumps(older))
    paths[2].write_bytes(junit)

    data = load_local(paths)

    runs = data.runs.set_index("run_id")
    assert runs[list(HEAP_RUNS)].dtypes.eq("float64").all()
    assert [runs.loc[1, key] for key in HEAP_RUNS] == [SESSION[key] for key in HEAP_RUNS]
    assert runs.loc[2, "heap_objects_start"] == SESSION["heap_objects_start"]
    assert math.isnan(runs.loc[2, "heap_objects_end"])  # absent: unknown
    assert runs.loc[3, list(HEAP_RUNS)].isna().all()  # JUnit knows none

    results = data.results.set_index(["run_id", "nodeid"])
    assert results[list(HEAP_RESULTS)].dtypes.eq("float64").all()
    assert results.loc[(1, "t.py::walks"), list(HEAP_RESULTS)].tolist() == [0.031, 2.0, 151_234.0]
    assert results.loc[(1, "t.py::quiet"), "heap_scans"] == 0.0  # measured none: a known zero
    assert math.isnan(results.loc[(1, "t.py::quiet"), "heap_objects"])
    walks_b = results.loc[(2, "t.py::walks")]
    assert math.isnan(walks_b["gc_s"])  # the bad value, dropped with a warning
    assert walks_b["heap_scans"] == 2.0
    assert math.isnan(walks_b["heap_objects"])
    assert any("gc_s" in warning for warning in data.reports[1].warnings)
    junit_rows = data.results[data.results["run_id"] == 3]
    assert len(junit_rows) == 1
    assert junit_rows[list(HEAP_RESULTS)].isna().all().all()


def test_local_reports_carry_the_run_queue_wait_into_the_frames(tmp_path: Path) -> None:
    idle = dict(TEST, nodeid="t.py::idle", cpu_wait_s=0.0)
    first = document(dict(TEST, nodeid="t.py::queued"), idle)
    older = document(dict(TEST, nodeid="t.py::queued", cpu_wait_s=-2.0), idle)
    del older["session"]["cpu_wait_s"]
    elsewhere = document(dict(TEST, nodeid="t.py::queued", cpu_wait_s=None))
    elsewhere["session"]["cpu_wait_s"] = None  # no /proc: the kernel did not say
    junit = b'<testsuite><testcase classname="t" name="idle" file="t.py" time="1.0"/></testsuite>'
    paths = [tmp_path / name for name in ("a.json", "b.json", "c.json", "d.xml")]
    for path, doc in zip(paths, (first, older, elsewhere), strict=False):
        path.write_text(json.dumps(doc))
    paths[3].write_bytes(junit)

    data = load_local(paths)

    runs = data.runs.set_index("run_id")["cpu_wait_s"]
    assert runs.dtype == "float64"
    assert runs.loc[1] == SESSION["cpu_wait_s"]
    assert runs.loc[[2, 3, 4]].isna().all()  # absent, null, JUnit: unknown, never 0
    results = data.results.set_index(["run_id", "nodeid"])["cpu_wait_s"]
    assert results.dtype == "float64"
    assert results.loc[(1, "t.py::queued")] == TEST["cpu_wait_s"]
    assert results.loc[(1, "t.py::idle")] == 0.0  # measured no wait: a known zero
    assert math.isnan(results.loc[(2, "t.py::queued")])  # the bad value, dropped
    assert results.loc[(2, "t.py::idle")] == 0.0
    assert any("cpu_wait_s" in warning for warning in data.reports[1].warnings)
    assert math.isnan(results.loc[(3, "t.py::queued")])
    assert math.isnan(results.loc[(4, "t.py::idle")])


def test_local_reports_carry_the_allocator_state_into_the_runs_frame(tmp_path: Path) -> None:
    docs = [document(TEST, session=dict(SESSION, malloc=state)) for state in MALLOC_STATES]
    older = document(TEST)
    del older["session"]["malloc"]
    docs += [older, document(TEST, session=dict(SESSION, malloc="jemalloc"))]
    paths = [tmp_path / f"r{i}.json" for i in range(len(docs))]
    for path, doc in zip(paths, docs, strict=True):
        path.write_text(json.dumps(doc))
    junit = tmp_path / "j.xml"
    junit.write_bytes(b'<testsuite><testcase classname="t" name="a" time="1.0"/></testsuite>')

    data = load_local([*paths, junit])

    # Absent, invalid (dropped with a warning), JUnit: unknown, None (never NaN or a guess).
    assert data.runs.sort_values("run_id")["malloc"].tolist() == [*MALLOC_STATES, None, None, None]
    assert any("malloc" in warning for warning in data.reports[5].warnings)


def _plan_history(tmp_path: Path, states: tuple[str | None, ...], *args: str) -> str:
    """`laptime plan --history` over one laptime JSON report per allocator state."""
    paths = []
    for index, state in enumerate(states):
        doc = document(TEST, dict(TEST, nodeid="tests/test_z.py::test_z", file="tests/test_z.py"))
        doc["session"]["malloc"] = state
        paths.append(tmp_path / f"r{index}.json")
        paths[-1].write_text(json.dumps(doc))
    result = CliRunner().invoke(cli, ["plan", "--history", "--jobs", "2", *map(str, paths), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_plan_names_malloc_missing_when_a_history_run_was_dynamic(tmp_path: Path) -> None:
    pinned = json.loads(_plan_history(tmp_path, ("pinned", "environment"), "--json"))
    assert "malloc" not in pinned["inputs_missing"]
    dynamic = json.loads(_plan_history(tmp_path, ("pinned", "dynamic"), "--json"))
    assert "malloc" in dynamic["inputs_missing"]
    assert all("malloc" in job["parts"]["inputs_missing"] for job in dynamic["jobs"])
    said = " ".join(_plan_history(tmp_path, ("pinned", None)).split())
    assert "history lacks malloc" in said
    assert "glibc's dynamic malloc thresholds" in said
