"""Webhook deliveries against a real HTTP receiver on loopback and a real database: signed
bodies, retries after 500s with backoff, giving up after N, every state recorded, and a
sender killed mid-retry losing nothing."""

from __future__ import annotations

import hashlib
import hmac
import json
import signal
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, text

from app.db.engine import make_engine
from app.db.projects import get_project
from app.project_records import Project
from app.services.webhooks import (
    DeliveryInfo,
    add_webhook,
    deliver_due,
    enqueue_event,
    list_deliveries,
)
from notify.events import EventError
from notify.retry import RetryPolicy
from notify.signing import verify
from notify.targets import WebhookUrlError
from tests.conftest import make_project
from tests.server.conftest import start_worker, wait_for
from tests.server.webhook_receiver import receiver

# A change as the stored changes will queue it (synthetic: the fields the event promises).
CHANGE = {
    "change_id": 41,
    "kind": "test",
    "subject": "tests/test_io.py::test_read[<@channel>]",
    "cell": "os=linux,python=3.12",
    "median_before_s": 1.0,
    "median_after_s": 3.5,
    "delta_s": 2.5,
    "commit_before": "a" * 40,
    "commit_after": "b" * 40,
    "runs_before": 12,
    "url": "https://laptime.example/p/changes/41",
}
NOW = RetryPolicy(max_attempts=5, first_delay_s=0.0, timeout_s=2.0, allow_private=True)


@pytest.fixture
def db(private_db: str) -> Iterator[Engine]:
    """An engine on a database of this test's own (no other test's sender takes its rows)."""
    engine = make_engine(private_db, pool_size=2)
    yield engine
    engine.dispose()


def _project(engine: Engine) -> Project:
    made = make_project(engine)
    with engine.connect() as conn:
        found = get_project(conn, made.slug)
    assert found is not None
    return found


def _register(engine: Engine, project: Project, url: str, **kw: Any) -> tuple[int, str]:
    with engine.begin() as conn:
        info, secret = add_webhook(conn, project, url, **{"allow_private": True, **kw})
    return info.id, secret


def _queue(engine: Engine, project: Project, payload: dict[str, Any] = CHANGE) -> list[int]:
    with engine.begin() as conn:
        return enqueue_event(conn, project, "change.detected", payload)


def _deliveries(engine: Engine, project: Project) -> list[DeliveryInfo]:
    with engine.connect() as conn:
        return list_deliveries(conn, project)


def test_a_change_is_delivered_once_signed_as_json_and_as_slack_text(db: Engine) -> None:
    project = _project(db)
    with receiver(200) as rx:
        _, secret = _register(db, project, f"{rx.url}/hook?x=1")
        _, slack_secret = _register(db, project, f"{rx.url}/slack", fmt="slack")
        assert len(_queue(db, project)) == 2
        # The same change again: sent once per change.
        assert _queue(db, project) == []
        assert deliver_due(db, NOW) == 2
        by_path = {r.path: r for r in rx.received}
    assert set(by_path) == {"/hook?x=1", "/slack"}
    hook = by_path["/hook?x=1"]
    expected = "sha256=" + hmac.new(secret.encode(), hook.body, hashlib.sha256).hexdigest()
    assert hook.headers["X-Laptime-Signature"] == expected
    assert verify(secret, hook.body, hook.headers["X-Laptime-Signature"])
    assert not verify(slack_secret, hook.body, hook.headers["X-Laptime-Signature"])
    assert not verify(secret, hook.body + b" ", hook.headers["X-Laptime-Signature"])
    assert hook.headers["X-Laptime-Event"] == "change.detected"
    message = json.loads(hook.body)
    assert message["event"] == "change.detected"
    assert message["project"] == project.slug
    assert message["data"] == CHANGE
    slack = by_path["/slack"]
    assert verify(slack_secret, slack.body, slack.headers["X-Laptime-Signature"])
    line = json.loads(slack.body)["text"]
    # A hostile nodeid cannot mention @channel or make a link in Slack.
    assert "&lt;@channel&gt;" in line
    assert "<@channel>" not in line
    assert "2.50s slower per run (1.00s -> 3.50s) since commit bbbbbbbbbbbb" in line
    states = _deliveries(db, project)
    assert [(d.state, d.attempts, d.last_status) for d in states] == [("delivered", 1, 200)] * 2


def test_a_payload_without_the_event_fields_is_refused(db: Engine) -> None:
    project = _project(db)
    with pytest.raises(EventError, match="median_after_s"):
        _queue(db, project, {k: v for k, v in CHANGE.items() if k != "median_after_s"})
    with pytest.raises(EventError, match="delta_s"):
        _queue(db, project, {**CHANGE, "delta_s": "2.5"})
    with db.begin() as conn, pytest.raises(EventError, match="no event"):
        enqueue_event(conn, project, "change.guessed", CHANGE)


def test_retried_after_500s_with_the_same_signed_body_then_delivered(db: Engine) -> None:
    project = _project(db)
    with receiver(500, 503, 200) as rx:
        _, secret = _register(db, project, rx.url)
        [delivery_id] = _queue(db, project)
        seen = []
        for _ in range(3):
            assert deliver_due(db, NOW) == 1
            [d] = _deliveries(db, project)
            seen.append((d.state, d.attempts, d.last_status))
        assert deliver_due(db, NOW) == 0
        bodies = [r.body for r in rx.received]
        attempts = [r.headers["X-Laptime-Attempt"] for r in rx.received]
    assert seen == [("pending", 1, 500), ("pending", 2, 503), ("delivered", 3, 200)]
    assert len(set(bodies)) == 1
    assert attempts == ["1", "2", "3"]
    assert all(
        verify(secret, b, r.headers["X-Laptime-Signature"])
        for b, r in zip(bodies, rx.received, strict=True)
    )
    [d] = _deliveries(db, project)
    assert d.id == delivery_id
    assert d.last_error is None
    assert d.delivered_at is not None


def _due_in(engine: Engine, delivery_id: int) -> timedelta:
    with engine.connect() as conn:
        return conn.execute(
            text("SELECT next_attempt_at - last_attempt_at FROM webhook_delivery WHERE id = :id"),
            {"id": delivery_id},
        ).scalar_one()


def test_backoff_doubles_and_a_delivery_waits_until_due(db: Engine) -> None:
    project = _project(db)
    policy = RetryPolicy(
        max_attempts=5, first_delay_s=60.0, max_delay_s=150.0, timeout_s=2.0, allow_private=True
    )
    with receiver(500) as rx:
        _register(db, project, rx.url)
        [delivery_id] = _queue(db, project)
        waits = []
        for _ in range(3):
            assert deliver_due(db, policy) == 1
            waits.append(_due_in(db, delivery_id).total_seconds())
            # Not due yet: nothing is sent.
            assert deliver_due(db, policy) == 0
            # The clock moves on (rather than the test sleeping a minute).
            with db.begin() as conn:
                conn.execute(
                    text("UPDATE webhook_delivery SET next_attempt_at = now() WHERE id = :id"),
                    {"id": delivery_id},
                )
        assert len(rx.received) == 3
    assert waits == pytest.approx([60.0, 120.0, 150.0], abs=0.5)


def test_gives_up_after_the_last_attempt_and_says_why(db: Engine) -> None:
    project = _project(db)
    policy = RetryPolicy(max_attempts=3, first_delay_s=0.0, timeout_s=2.0, allow_private=True)
    with receiver(500) as rx:
        _register(db, project, rx.url)
        _queue(db, project)
        tried = 0
        while sent := deliver_due(db, policy):
            tried += sent
        assert tried == 3
        assert len(rx.received) == 3
    [d] = _deliveries(db, project)
    assert d.state == "failed"
    assert d.attempts == 3
    assert d.last_status == 500
    assert d.last_error == "HTTP 500: status 500"
    assert d.next_attempt_at is None


def test_redirects_are_not_followed_answers_are_bounded_and_a_silent_receiver_times_out(
    db: Engine,
) -> None:
    project = _project(db)
    policy = RetryPolicy(
        max_attempts=5,
        first_delay_s=0.0,
        timeout_s=0.5,
        max_response_bytes=1000,
        allow_private=True,
    )
    with receiver("redirect", 599, "hold") as rx:
        _register(db, project, rx.url)
        _queue(db, project)
        deliver_due(db, policy)
        [d] = _deliveries(db, project)
        assert d.last_status == 302
        assert "not followed" in d.last_error
        deliver_due(db, policy)  # a 500 with a 200 kB answer: 1000 bytes read, 500 kept
        [d] = _deliveries(db, project)
        assert d.last_status == 500
        assert len(d.last_error) <= 500
        started = time.monotonic()
        deliver_due(db, policy)  # the receiver never answers
        took = time.monotonic() - started
        [d] = _deliveries(db, project)
        assert [r.path for r in rx.received] == ["/", "/", "/"]  # never /elsewhere
    assert d.state == "pending"
    assert d.last_status is None
    assert "timed out" in d.last_error
    assert took < 4 * policy.timeout_s


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "gopher://127.0.0.1:6379/_FLUSHALL",
        "ftp://example.com/x",
        "javascript:alert(1)",
        "http://user:pw@example.com/hook",
        "http:///no-host",
        "http://example.com/a b",
        "//example.com/hook",
    ],
)
def test_only_http_and_https_addresses_are_registered(db: Engine, url: str) -> None:
    project = _project(db)
    with pytest.raises(WebhookUrlError):
        _register(db, project, url)


def test_a_sender_killed_mid_retry_loses_nothing(db: Engine, private_db: str) -> None:
    project = _project(db)
    env = (
        ("LAPTIME_WEBHOOK_FIRST_DELAY_S", "0"),
        ("LAPTIME_WEBHOOK_TIMEOUT_S", "0.5"),
        ("LAPTIME_WEBHOOK_POLL_S", "0.1"),
        ("LAPTIME_WEBHOOK_ALLOW_PRIVATE", "true"),  # the receiver is on loopback
    )
    with receiver(500, "hold", 200) as rx:
        # Only the change: a worker also queues the week's digest for every webhook hearing it.
        _, secret = _register(db, project, rx.url, events=["change.detected"])
        _queue(db, project)
        first = start_worker(private_db, *env)
        try:
            # The retry is on the wire when the worker dies.
            wait_for(lambda: len(rx.received) >= 2, what="the retry reached the receiver")
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=30)
        [d] = _deliveries(db, project)
        assert (d.state, d.attempts, d.last_status) == ("pending", 2, 500)
        second = start_worker(private_db, *env)
        try:
            wait_for(
                lambda: _deliveries(db, project)[0].state == "delivered",
                what="the new worker delivered it once the dead one's lease ended",
            )
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(timeout=30)
        received = list(rx.received)
    [d] = _deliveries(db, project)
    assert (d.attempts, d.last_status) == (3, 200)
    assert len(received) == 3
    assert len({r.body for r in received}) == 1
    assert all(verify(secret, r.body, r.headers["X-Laptime-Signature"]) for r in received)
