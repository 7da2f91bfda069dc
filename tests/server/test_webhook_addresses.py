"""Webhooks to private addresses, end to end: refused with a 422 when registered on a server
that does not allow them, and refused again at delivery (the name's addresses may have
changed since) as one failed delivery with the reason, never retried; a redirect to a
private address is not followed."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import Engine

from app.db.engine import make_engine
from app.db.projects import get_project
from app.factory import create_app
from app.project_records import Project
from app.services.webhooks import (
    DeliveryInfo,
    add_webhook,
    deliver_due,
    enqueue_event,
    list_deliveries,
)
from app.settings import Settings
from notify.retry import RetryPolicy
from tests.conftest import ProjectFixture, make_project
from tests.server.app_server import serve
from tests.server.test_webhooks import CHANGE
from tests.server.webhook_receiver import receiver

STRICT = RetryPolicy(max_attempts=5, first_delay_s=0.0, timeout_s=2.0)


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


def _deliveries(engine: Engine, project: Project) -> list[DeliveryInfo]:
    with engine.connect() as conn:
        return list_deliveries(conn, project)


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://127.0.0.1:8080/hook", "127.0.0.1 is a loopback address"),
        ("http://169.254.169.254/latest", "169.254.169.254 is a link-local address"),
        ("http://[::1]:9/hook", "::1 is a loopback address"),
        ("http://[::ffff:10.0.0.1]/hook", "is a private address"),
        ("http://localhost:9/hook", "127.0.0.1 ('localhost') is a loopback address"),
    ],
)
def test_registering_a_private_address_is_a_422_that_says_why(
    engine: Engine, project: ProjectFixture, url: str, said: str
) -> None:
    admin = {"Authorization": f"Bearer {project.admin_token}"}
    with serve(create_app(Settings(), engine)) as base:
        hooks = f"{base}/api/v1/projects/{project.slug}/webhooks"
        refused = httpx.post(hooks, json={"url": url}, headers=admin)
        assert refused.status_code == 422, refused.text
        assert said in refused.json()["detail"]
        assert "LAPTIME_WEBHOOK_ALLOW_PRIVATE=true" in refused.json()["detail"]
        assert httpx.get(hooks, headers=admin).json() == {"webhooks": []}


def test_a_delivery_to_an_address_now_private_fails_once_with_the_reason(db: Engine) -> None:
    project = _project(db)
    with receiver(200) as rx:
        # Registered while allowed (or while the name pointed elsewhere); delivered under the
        # default policy: refused before any connection, failed, not retried.
        with db.begin() as conn:
            add_webhook(conn, project, f"{rx.url}/hook", allow_private=True)
            (delivery,) = enqueue_event(conn, project, "change.detected", CHANGE)
        assert deliver_due(db, STRICT) == 1
        assert deliver_due(db, STRICT) == 0
        assert rx.received == []
    (record,) = _deliveries(db, project)
    assert record.id == delivery
    assert record.state == "failed"
    assert record.attempts == 1
    assert (record.last_error or "").startswith("refused: 127.0.0.1 is a loopback address")


def test_a_redirect_to_a_private_address_is_not_followed(db: Engine) -> None:
    project = _project(db)
    metadata = "http://169.254.169.254/latest/meta-data/"
    with receiver(f"redirect:{metadata}", 200) as rx:
        with db.begin() as conn:
            add_webhook(conn, project, f"{rx.url}/hook", allow_private=True)
            enqueue_event(conn, project, "change.detected", CHANGE)
        deliver_due(db, RetryPolicy(max_attempts=1, timeout_s=2.0, allow_private=True))
        assert [r.path for r in rx.received] == ["/hook"]
    (record,) = _deliveries(db, project)
    assert record.state == "failed"
    assert record.last_error == f"HTTP 302: redirect to {metadata!r} not followed"
