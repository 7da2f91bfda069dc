"""Webhooks: register addresses, queue events for them, deliver off the request path.

`enqueue_event` only writes rows in the caller's transaction (so an event is queued exactly
when what caused it commits); `deliver_due` and `run_deliveries` run in the worker process,
never on a web process's event loop: each attempt is claimed in a short transaction, sent
with bounded time and reads, and recorded in another (docs/webhooks.md).
"""

from __future__ import annotations

import http.client
import logging
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlsplit

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DBAPIError

from analysis.errors import AnswerError
from app.db.webhooks import (
    ClaimedDelivery,
    DeliveryInfo,
    WebhookInfo,
    claim_due,
    delete_webhook,
    insert_delivery,
    insert_webhook,
    record_attempt,
    select_deliveries,
    select_webhooks,
    subscribers,
)
from app.project_records import Project
from notify.addresses import WebhookAddressError, check_address
from notify.events import (
    EVENTS,
    FORMATS,
    EventData,
    EventError,
    check_event,
    delivery_body,
    envelope,
    event_fields,
)
from notify.retry import RetryPolicy
from notify.signing import SIGNATURE_HEADER, sign
from notify.targets import check_url

__all__ = [
    "STATES",
    "AttemptOutcome",
    "DeliveryInfo",
    "WebhookInfo",
    "WebhookNotFound",
    "add_webhook",
    "deliver_due",
    "enqueue_event",
    "list_deliveries",
    "list_webhooks",
    "post_delivery",
    "remove_webhook",
    "run_deliveries",
]

log = logging.getLogger("laptime.webhooks")

STATES = ("pending", "delivered", "failed")
# Deliveries one claim takes; each is sent before the next claim.
CLAIM_BATCH = 20
# Characters of a receiver's answer kept in the record.
MAX_ERROR_CHARS = 500
USER_AGENT = "laptime-webhooks/1"


class WebhookNotFound(AnswerError):
    """No webhook with this id in this project (a 404)."""

    status = 404
    code = "webhook-not-found"


def add_webhook(
    conn: Connection,
    project: Project,
    url: str,
    *,
    events: Sequence[str] | None = None,
    fmt: str = "json",
    secret: str | None = None,
    allow_private: bool = False,
) -> tuple[WebhookInfo, str]:
    """Register `url` for `events` (default: all); the webhook and its secret (shown once)."""
    check_url(url)
    check_address(url, allow_private=allow_private)
    chosen = sorted(set(events)) if events else sorted(EVENTS)
    unknown = [e for e in chosen if e not in EVENTS]
    if unknown:
        raise EventError(f"no event {unknown[0]!r}; events: {', '.join(EVENTS)}")
    if fmt not in FORMATS:
        raise EventError(f"format must be one of {', '.join(FORMATS)}")
    secret = secret or secrets.token_urlsafe(32)
    info = insert_webhook(conn, project.id, url=url, secret=secret, fmt=fmt, events=chosen)
    return info, secret


def list_webhooks(conn: Connection, project: Project) -> list[WebhookInfo]:
    """The project's webhooks, secrets left out."""
    return select_webhooks(conn, project.id)


def remove_webhook(conn: Connection, project: Project, webhook_id: int) -> None:
    """Remove a webhook and its deliveries."""
    if not delete_webhook(conn, project.id, webhook_id):
        raise WebhookNotFound(f"no webhook {webhook_id} in project {project.slug!r}")


def list_deliveries(
    conn: Connection,
    project: Project,
    *,
    webhook_id: int | None = None,
    state: str | None = None,
    limit: int = 100,
) -> list[DeliveryInfo]:
    """The newest deliveries with their state, attempts and last answer."""
    if state is not None and state not in STATES:
        raise AnswerError(f"state must be one of {', '.join(STATES)}")
    return select_deliveries(conn, project.id, webhook_id=webhook_id, state=state, limit=limit)


def enqueue_event(
    conn: Connection,
    project: Project,
    event: str,
    data: EventData,
    *,
    dedupe_key: str | None = None,
    now: datetime | None = None,
) -> list[int]:
    """Queue `event` for every webhook of the project that hears it; the delivery ids.

    `data` is the event's data (notify/events.py says its fields). A change is sent once:
    "change.detected" defaults its dedupe key to the change id, and a key a webhook has had
    already queues nothing for it."""
    fields = event_fields(data)
    check_event(event, fields)
    if dedupe_key is None and event == "change.detected":
        dedupe_key = f"change:{fields['change_id']}"
    message = envelope(
        event,
        project.slug,
        fields,
        event_id=uuid.uuid4().hex,
        created_at=now or datetime.now(UTC),
    )
    queued = []
    for webhook_id, fmt in subscribers(conn, project.id, event):
        delivery = insert_delivery(
            conn,
            webhook_id=webhook_id,
            project_id=project.id,
            event=event,
            event_id=str(message["id"]),
            dedupe_key=dedupe_key,
            body=delivery_body(message, fmt),
        )
        if delivery is not None:
            queued.append(delivery)
    return queued


@dataclass(frozen=True)
class AttemptOutcome:
    """What one attempt got: delivered (a 2xx), the status if any, the error if not."""

    delivered: bool
    status: int | None
    error: str | None
    # No later try can do better (the address is refused): failed now, not retried.
    final: bool = False


def post_delivery(claimed: ClaimedDelivery, policy: RetryPolicy) -> AttemptOutcome:
    """POST the signed body once: no redirects followed, every step under the policy's
    timeout, at most `max_response_bytes` of the answer read."""
    try:
        check_url(claimed.url)
        # Checked again at each delivery: a name's addresses may have changed since.
        addresses = check_address(claimed.url, allow_private=policy.allow_private)
    except WebhookAddressError as exc:
        return AttemptOutcome(False, None, f"refused: {exc}"[:MAX_ERROR_CHARS], final=True)
    except AnswerError as exc:
        return AttemptOutcome(False, None, str(exc))
    parts = urlsplit(claimed.url)
    deadline = time.monotonic() + 3 * policy.timeout_s
    kind = (
        http.client.HTTPSConnection
        if parts.scheme.lower() == "https"
        else http.client.HTTPConnection
    )
    connection = kind(parts.hostname or "", parts.port, timeout=policy.timeout_s)
    if addresses:
        _pin(connection, addresses[0])
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Laptime-Event": claimed.event,
        "X-Laptime-Delivery": str(claimed.id),
        "X-Laptime-Event-Id": claimed.event_id,
        "X-Laptime-Attempt": str(claimed.attempts),
        SIGNATURE_HEADER: sign(claimed.secret, claimed.body),
    }
    try:
        connection.request("POST", path, body=claimed.body, headers=headers)
        _shorten(connection, deadline, policy)
        response = connection.getresponse()
        answer = _bounded_read(response, connection, deadline, policy)
    except (OSError, http.client.HTTPException) as exc:
        return AttemptOutcome(False, None, f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS])
    finally:
        connection.close()
    if 200 <= response.status < 300:
        return AttemptOutcome(True, response.status, None)
    detail = answer.decode("utf-8", "replace").strip()
    if 300 <= response.status < 400:
        detail = f"redirect to {response.getheader('Location')!r} not followed"
    return AttemptOutcome(
        False, response.status, f"HTTP {response.status}: {detail}"[:MAX_ERROR_CHARS]
    )


def _pin(connection: http.client.HTTPConnection, address: str) -> None:
    """Connect to the `address` that was checked, not to a second lookup of the name (which
    could answer differently); the Host header and TLS name stay the URL's host."""

    def connect(
        target: tuple[str, int], timeout: float | None, source: tuple[str, int] | None = None
    ) -> socket.socket:
        return socket.create_connection((address, target[1]), timeout, source)

    connection._create_connection = connect  # type: ignore[attr-defined]


def _shorten(connection: http.client.HTTPConnection, deadline: float, policy: RetryPolicy) -> None:
    """Wait no longer than the attempt's deadline on the next socket operation."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the attempt's time is up")
    if connection.sock is not None:
        connection.sock.settimeout(min(policy.timeout_s, left))


def _bounded_read(
    response: http.client.HTTPResponse,
    connection: http.client.HTTPConnection,
    deadline: float,
    policy: RetryPolicy,
) -> bytes:
    """At most `max_response_bytes` of the answer, within the deadline (a receiver that
    drips an endless answer is cut off, not waited for)."""
    kept = b""
    while len(kept) < policy.max_response_bytes:
        _shorten(connection, deadline, policy)
        chunk = response.read1(min(8192, policy.max_response_bytes - len(kept)))
        if not chunk:
            break
        kept += chunk
    return kept


def deliver_due(
    engine: Engine,
    policy: RetryPolicy,
    *,
    limit: int = CLAIM_BATCH,
    send: Callable[[ClaimedDelivery, RetryPolicy], AttemptOutcome] = post_delivery,
) -> int:
    """Claim due deliveries, send each once and record its outcome; how many were tried."""
    with engine.begin() as conn:
        claimed = claim_due(conn, limit=limit, lease_s=policy.lease_s)
    for delivery in claimed:
        outcome = send(delivery, policy)
        retry = None
        if not (outcome.delivered or outcome.final or policy.gives_up(delivery.attempts)):
            retry = policy.delay_s(delivery.attempts)
        with engine.begin() as conn:
            record_attempt(
                conn,
                delivery.id,
                delivered=outcome.delivered,
                status=outcome.status,
                error=outcome.error,
                retry_in_s=retry,
            )
        log.info(
            "webhook delivery %d attempt %d: %s",
            delivery.id,
            delivery.attempts,
            "delivered" if outcome.delivered else outcome.error,
        )
    return len(claimed)


def run_deliveries(
    engine: Engine,
    policy: RetryPolicy,
    stop: threading.Event,
    *,
    poll_s: float,
    each_pass: Callable[[Engine], object] | None = None,
) -> None:
    """Deliver until `stop`: drain what is due, run `each_pass` (the weekly digests), wait
    `poll_s`. Database outages are waited out, never the end of the loop."""
    while not stop.is_set():
        try:
            while deliver_due(engine, policy) and not stop.is_set():
                pass
            if each_pass is not None:
                each_pass(engine)
        except DBAPIError as exc:
            log.warning("webhook deliveries wait for the database: %s", str(exc).splitlines()[0])
        except Exception:
            # One bad pass (a digest that cannot be made) must not stop every later delivery.
            log.exception("webhook delivery pass failed")
        stop.wait(poll_s)
