"""Frames kept between requests never outlive the data: an ingest shows up at once."""

from __future__ import annotations

import gc
from datetime import UTC, datetime, timedelta

import httpx
import numpy as np
import pandas as pd
import pytest
from psycopg import sql
from sqlalchemy import Engine

from app.db.copy_frames import copy_numeric_frame
from app.db.repository import load_test_dictionary
from app.services.project_reads import FrameCache, SharedFrames, project_rollup, window_filters
from ingest.merge import merge_reports
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.server.test_rollup_api import get, junit
from tests.server.test_store import _report, _store
from tests.server.test_upload_flow import upload, wait_done


def _send(
    live_server: LiveServer, project: ProjectFixture, job: str, seconds: float, started_at: str
) -> None:
    """Upload one test's JUnit report through the API and wait until it is ingested."""
    report = junit([("tests.test_a", "test_one", seconds, "passed")])
    response = upload(
        live_server, project.upload_token, [("r.xml", report)], job=job, started_at=started_at
    )
    assert response.status_code == 202, response.text
    assert wait_done(live_server, project.upload_token, response.json()["id"])["status"] == "done"


def test_a_new_upload_changes_the_next_answer(live_server: LiveServer, engine: Engine) -> None:
    project = make_project(engine)
    today = datetime.now(UTC).replace(hour=8, minute=0, second=0, microsecond=0).isoformat()

    def send(job: str, seconds: float) -> None:
        _send(live_server, project, job, seconds, today)

    send("first", 3.0)
    for by in ("test", "file"):
        assert get(live_server, project, "rollups", by=by).json()["grand_total_s"] == (
            pytest.approx(3.0)
        )
    # The same question again is answered from kept frames...
    assert get(live_server, project, "rollups", by="test").json()["rows"][0]["runs"] == 1
    send("second", 4.0)
    # ...until a run is stored: then the project's data version moves on.
    for by in ("test", "file"):
        body = get(live_server, project, "rollups", by=by).json()
        assert body["grand_total_s"] == pytest.approx(7.0)
        assert body["rows"][0]["runs"] == 2


def test_late_and_current_uploads_both_reach_a_long_window(
    live_server: LiveServer, engine: Engine
) -> None:
    # Weeks before this one are kept apart from this week's rows: a run dated in an earlier
    # week must still show up at once, as must one of this week.
    project = make_project(engine)
    now = datetime.now(UTC).replace(microsecond=0)
    three_weeks_ago = (now - timedelta(days=21)).isoformat()

    def send(job: str, seconds: float, started_at: str) -> None:
        _send(live_server, project, job, seconds, started_at)

    def totals() -> list[float]:
        return [
            get(live_server, project, "rollups", by=by, days=60).json()["grand_total_s"]
            for by in ("test", "file")
        ]

    send("old", 3.0, three_weeks_ago)
    assert totals() == [pytest.approx(3.0)] * 2
    send("now", 4.0, now.isoformat())
    assert totals() == [pytest.approx(7.0)] * 2
    send("late", 5.0, three_weeks_ago)
    assert totals() == [pytest.approx(12.0)] * 2


def test_shared_frames_drop_the_least_recently_used() -> None:
    shared = SharedFrames(max_entries=2)
    loads: list[str] = []

    def loader(name: str) -> pd.DataFrame:
        def load() -> pd.DataFrame:
            loads.append(name)
            return pd.DataFrame({"x": [name]})

        return load

    shared.get(("a",), loader("a"))
    shared.get(("b",), loader("b"))
    shared.get(("a",), loader("a"))  # kept; now the most recent
    shared.get(("c",), loader("c"))  # evicts b
    shared.get(("a",), loader("a"))
    shared.get(("b",), loader("b"))
    assert loads == ["a", "b", "c", "b"]
    # A byte budget bounds them too: a frame larger than the budget is not kept.
    tight = SharedFrames(max_bytes=1)
    tight.get(("big",), loader("big"))
    tight.get(("big",), loader("big"))
    assert loads[-2:] == ["big", "big"]


def test_an_answer_cut_short_is_returned_but_not_kept() -> None:
    shared = SharedFrames()
    loads: list[int] = []

    def load() -> dict[str, bool]:
        loads.append(1)
        return {"complete": len(loads) > 1}

    def complete(answer: dict[str, bool]) -> bool:
        return answer["complete"]

    for _ in range(2):  # a fresh cache per request, as the routes make them
        cache = FrameCache(shared, version=(1, 1, 1))
        first = cache.get(("split",), load, keep=complete)
    assert first == {"complete": True}  # the incomplete first answer was not kept
    assert cache.get(("split",), load, keep=complete) == {"complete": True}
    assert FrameCache(shared, version=(1, 1, 1)).get(("split",), load, keep=complete) == first
    assert len(loads) == 2  # the complete one is kept, both per request and shared


def test_numeric_frames_arrive_through_binary_copy(engine: Engine) -> None:
    query = """
        SELECT * FROM (VALUES (1::int8, DATE '2026-11-30', 2.5::float8),
                              (9223372036854775807, DATE '1999-12-31', 'NaN'::float8)) v(i, d, f)
        WHERE v.f IS DISTINCT FROM %(skip)s
    """
    spec = (("i", "int8"), ("d", "date"), ("f", "float8"))
    with engine.connect() as conn:
        frame = copy_numeric_frame(conn, sql.SQL(query), {"skip": -1.0}, spec)  # type: ignore[arg-type]
        empty = copy_numeric_frame(
            conn,
            sql.SQL(query.replace("IS DISTINCT FROM", "=")),
            {"skip": -1.0},
            spec,  # type: ignore[arg-type]
        )
        with pytest.raises(ValueError, match="NULLs"):
            copy_numeric_frame(
                conn,
                sql.SQL("SELECT NULL::int8 AS i, DATE '2026-01-01' AS d, 1.0::float8 AS f"),
                {},
                spec,  # type: ignore[arg-type]
            )
        with pytest.raises(ValueError, match="fixed-width"):
            copy_numeric_frame(
                conn,
                sql.SQL("SELECT 1::int4 AS i, DATE '2026-01-01' AS d, 1.0::float8 AS f"),
                {},
                spec,  # type: ignore[arg-type]
            )
    assert frame["i"].tolist() == [1, 9223372036854775807]
    assert frame["d"].tolist() == [pd.Timestamp("2026-11-30"), pd.Timestamp("1999-12-31")]
    assert frame["f"].iloc[0] == 2.5
    assert np.isnan(frame["f"].iloc[1])
    assert len(empty) == 0
    assert list(empty.columns) == ["i", "d", "f"]


def test_test_dictionary_keeps_marker_sets_unknown_markers_and_param_values(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    report = _report(
        nodeid=["t.py::a[1-x]", "t.py::b", "t.py::c"],
        file=["t.py"] * 3,
        function=["a", "b", "c"],
        params=["1-x", None, None],
        param_values=[{"n": 1, "s": "x"}, None, None],
        markers=[["slow", "gpu"], [], None],
        outcome=["passed"] * 3,
        duration_s=[1.0, 2.0, 3.0],
    )
    _store(database, project, merge_reports([report]))
    with engine.connect() as conn:
        tests = load_test_dictionary(conn, project.id).set_index("nodeid")
        bare = load_test_dictionary(conn, project.id, param_values=False).set_index("nodeid")
    assert tests.loc["t.py::a[1-x]", "markers"] == ("gpu", "slow")
    assert tests.loc["t.py::b", "markers"] == ()
    assert tests.loc["t.py::c", "markers"] is None
    assert tests.loc["t.py::a[1-x]", "param_values"] == {"n": 1, "s": "x"}
    assert tests.loc["t.py::b", "params"] is None
    assert tests.loc["t.py::a[1-x]", "params"] == "1-x"
    assert bare["param_values"].isna().all()
    assert bare["markers"].tolist() == tests["markers"].tolist()


def test_a_changed_marker_reaches_the_next_rollup(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    # The test dictionary is kept across uploads of known tests; a test's new markers must
    # still be seen at once.
    def send(markers: list[str]) -> None:
        report = _report(
            nodeid=["t.py::a"],
            file=["t.py"],
            function=["a"],
            markers=[markers],
            outcome=["passed"],
            duration_s=[1.0],
        )
        _store(database, project, merge_reports([report]), started_at=datetime.now(UTC))

    def marker_keys() -> list[str]:
        with engine.connect() as conn:
            result = project_rollup(conn, project.id, window_filters(30), by="marker")
        return sorted(result.rows["key"])

    send(["slow"])
    assert marker_keys() == ["slow"]
    send(["slow"])
    assert marker_keys() == ["slow"]
    send(["gpu"])
    assert marker_keys() == ["gpu"]


def test_a_started_server_has_settled_its_start_up_heap(live_server: LiveServer) -> None:
    # The live server runs in this process: its start-up froze what existed then, so a full
    # collection no longer walks the modules, classes and plotly validators.
    assert httpx.get(f"{live_server.url}/healthz", timeout=10).status_code == 200
    assert gc.get_freeze_count() > 50_000
