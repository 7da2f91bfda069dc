"""The upload's `merged_request` field over a live server: well-formed entries reach the run,
anything else is refused with a 422 naming the field, before anything is stored."""

from __future__ import annotations

import psycopg

from tests.conftest import Database, LiveServer, ProjectFixture
from tests.server.test_rollup_api import junit
from tests.server.test_upload_flow import upload, wait_done

REPORT = [("r.xml", junit([("tests.test_a", "test_one", 1.0, "passed")]))]


def test_merged_requests_reach_the_run(
    live_server: LiveServer, project: ProjectFixture, database: Database
) -> None:
    sha = "ab" * 20
    sent = upload(
        live_server, project.upload_token, REPORT,
        commit=sha, first_parent=[sha], merged_request=[f"{sha.upper()}:12", "abcdef1:3"],
    )  # fmt: skip
    assert sent.status_code == 202, sent.text
    assert wait_done(live_server, project.upload_token, sent.json()["id"])["status"] == "done"
    with psycopg.connect(database.dsn) as conn:
        stored = conn.execute(
            "SELECT merged_requests FROM run WHERE upload_id = %s", (sent.json()["id"],)
        ).fetchone()
    assert stored == ([f"{sha}:12", "abcdef1:3"],)


def test_malformed_merged_requests_are_refused(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    for bad in (
        ["zzzzzzz:1"], ["abcdef1:"], ["abcdef1"], ["abcdef1:12345678901"], ["abcdef1:1;rm -rf"],
        ["abcdef1:1\n"], ["abcdef1:1"] * 51,
    ):  # fmt: skip
        refused = upload(live_server, project.upload_token, REPORT, merged_request=bad)
        assert refused.status_code == 422, (bad, refused.text)
        assert "merged_request" in refused.text, bad
