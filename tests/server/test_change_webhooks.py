"""Stored changes are told to the project's webhooks: each change once, as the REST lists it.

Detection runs at ingest, which cannot reach the webhooks (ingest never imports the app); the
webhook sender's pass queues a "change.detected" delivery for every stored change a hearing
webhook has not had yet. Uploaded through the live server, delivered to a real receiver.
"""

from __future__ import annotations

import json

import httpx
from sqlalchemy import Engine

from app.db.projects import get_project
from app.services.change_notices import enqueue_new_changes
from app.services.webhooks import add_webhook, deliver_due
from notify.retry import RetryPolicy
from tests.changes_history import upload_step_history
from tests.conftest import LiveServer, make_project
from tests.server.webhook_receiver import receiver

NOW = RetryPolicy(max_attempts=3, first_delay_s=0.0, timeout_s=2.0, allow_private=True)


def test_each_stored_change_reaches_a_hearing_webhook_once(
    live_server: LiveServer, engine: Engine
) -> None:
    made = make_project(engine)
    with engine.connect() as conn:
        project = get_project(conn, made.slug)
    assert project is not None
    with receiver(200) as rx:
        with engine.begin() as conn:
            add_webhook(
                conn,
                project,
                f"{rx.url}/changes",
                events=["change.detected"],
                allow_private=True,
            )
        upload_step_history(live_server, made)
        listed = httpx.get(
            f"{live_server.url}/api/v1/projects/{made.slug}/changes",
            headers={"Authorization": f"Bearer {made.read_token}"},
            timeout=60,
        ).json()["changes"]
        assert listed, "the step history made no change"
        assert enqueue_new_changes(engine, projects=[project.id]) == len(listed)
        assert enqueue_new_changes(engine, projects=[project.id]) == 0  # once, whatever the passes
        deliver_due(engine, NOW)
        told = [json.loads(r.body) for r in rx.received if r.path == "/changes"]
    assert {body["event"] for body in told} == {"change.detected"}
    assert {body["project"] for body in told} == {made.slug}
    by_id = {body["data"]["change_id"]: body["data"] for body in told}
    assert sorted(by_id) == sorted(change["id"] for change in listed)
    for change in listed:
        data = by_id[change["id"]]
        assert data["kind"] == change["kind"]
        assert data["subject"] == change["name"]
        assert data["delta_s"] == change["delta_s"]
        assert data["commit_after"] == change["commit_after"]


def test_a_project_without_a_hearing_webhook_queues_nothing(
    live_server: LiveServer, engine: Engine
) -> None:
    made = make_project(engine)
    with engine.connect() as conn:
        project = get_project(conn, made.slug)
    assert project is not None
    with engine.begin() as conn:
        # Hears only the digest.
        add_webhook(
            conn,
            project,
            "http://127.0.0.1:9/digest",
            events=["digest.weekly"],
            allow_private=True,
        )
    upload_step_history(live_server, made)
    assert enqueue_new_changes(engine, projects=[project.id]) == 0
