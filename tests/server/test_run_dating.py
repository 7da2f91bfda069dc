"""A run is dated by the uploader, else by a plausible report timestamp, else when received:
an old or future report timestamp no longer hides a run from the default window."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine, text

from tests.conftest import LiveServer, ProjectFixture
from tests.server.test_upload_flow import upload, wait_done


def _report(timestamp: str, name: str) -> bytes:
    return (
        f'<testsuite name="s" tests="1" timestamp="{timestamp}">'
        f'<testcase classname="c" name="{name}" time="0.5"/></testsuite>'
    ).encode()


def _run_start(engine: Engine, run_id: int) -> datetime:
    with engine.connect() as conn:
        value = conn.execute(
            text("SELECT started_at FROM run WHERE id = :r"), {"r": run_id}
        ).scalar_one()
    assert isinstance(value, datetime)
    return value


@pytest.mark.parametrize(
    ("timestamp", "why"), [("2024-05-01T10:00:00", "older than"), ("2099-01-01T00:00:00", "future")]
)
def test_an_implausible_report_timestamp_dates_the_run_when_received(
    live_server: LiveServer, project: ProjectFixture, engine: Engine, timestamp: str, why: str
) -> None:
    before = datetime.now(UTC)
    answer = upload(live_server, project.upload_token, [("r.xml", _report(timestamp, why))])
    assert answer.status_code == 202, answer.text
    doc = wait_done(live_server, project.upload_token, answer.json()["id"])
    assert doc["status"] == "done"
    started = _run_start(engine, doc["run_id"])
    assert before - timedelta(seconds=5) <= started <= datetime.now(UTC)
    warning = next(w for w in doc["warnings"] if "timestamp" in w)
    assert timestamp in warning
    assert why in warning


def test_a_plausible_report_timestamp_and_backfill_are_kept(
    live_server: LiveServer, project: ProjectFixture, engine: Engine
) -> None:
    recent = (datetime.now(UTC) - timedelta(hours=2)).replace(microsecond=0)
    answer = upload(
        live_server, project.upload_token, [("r.xml", _report(recent.isoformat(), "recent"))]
    )
    doc = wait_done(live_server, project.upload_token, answer.json()["id"])
    assert _run_start(engine, doc["run_id"]) == recent
    assert not [w for w in doc["warnings"] if "timestamp" in w]

    old = "2024-05-01T10:00:00"
    answer = upload(
        live_server, project.upload_token, [("r.xml", _report(old, "old"))], backfill="true"
    )
    doc = wait_done(live_server, project.upload_token, answer.json()["id"])
    assert _run_start(engine, doc["run_id"]) == datetime(2024, 5, 1, 10, tzinfo=UTC)
    assert not [w for w in doc["warnings"] if "timestamp" in w]
