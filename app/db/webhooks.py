"""The `webhook` and `webhook_delivery` tables: addresses, and deliveries as queue items."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

# Characters of a secret shown in listings (the rest is never shown again).
SECRET_PREFIX_CHARS = 6


@dataclass(frozen=True)
class WebhookInfo:
    """A webhook as listed to an admin: everything but the secret (its first characters)."""

    id: int
    url: str
    format: str
    events: tuple[str, ...]
    secret_prefix: str
    created_at: datetime


@dataclass(frozen=True)
class DeliveryInfo:
    """One delivery and its state."""

    id: int
    webhook_id: int
    event: str
    event_id: str
    state: str
    attempts: int
    next_attempt_at: datetime | None  # None once delivered or failed
    last_attempt_at: datetime | None
    last_status: int | None
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None


@dataclass(frozen=True)
class ClaimedDelivery:
    """A delivery taken for one attempt: what to send, where, signed with what."""

    id: int
    attempts: int  # including this one
    event: str
    event_id: str
    body: bytes
    url: str
    secret: str


def insert_webhook(
    conn: Connection, project_id: int, *, url: str, secret: str, fmt: str, events: Sequence[str]
) -> WebhookInfo:
    """Register an address."""
    row = conn.execute(
        text(
            """
            INSERT INTO webhook (project_id, url, secret, format, events)
            VALUES (:project, :url, :secret, :format, :events)
            RETURNING id, url, format, events, secret, created_at
            """
        ),
        {"project": project_id, "url": url, "secret": secret, "format": fmt, "events": events},
    ).one()
    return _info(row)


def _info(row: Any) -> WebhookInfo:
    return WebhookInfo(
        id=int(row.id),
        url=str(row.url),
        format=str(row.format),
        events=tuple(row.events),
        secret_prefix=str(row.secret)[:SECRET_PREFIX_CHARS],
        created_at=row.created_at,
    )


def select_webhooks(conn: Connection, project_id: int) -> list[WebhookInfo]:
    """The project's webhooks, oldest first."""
    rows = conn.execute(
        text(
            "SELECT id, url, format, events, secret, created_at FROM webhook "
            "WHERE project_id = :project ORDER BY id"
        ),
        {"project": project_id},
    ).all()
    return [_info(row) for row in rows]


def delete_webhook(conn: Connection, project_id: int, webhook_id: int) -> bool:
    """Remove an address and its deliveries; False when the project has no such webhook."""
    row = conn.execute(
        text("DELETE FROM webhook WHERE project_id = :project AND id = :id RETURNING id"),
        {"project": project_id, "id": webhook_id},
    ).first()
    return row is not None


def subscribers(conn: Connection, project_id: int, event: str) -> list[tuple[int, str]]:
    """(id, format) of the project's webhooks that hear `event`."""
    rows = conn.execute(
        text(
            "SELECT id, format FROM webhook WHERE project_id = :project AND :event = ANY(events) "
            "ORDER BY id"
        ),
        {"project": project_id, "event": event},
    ).all()
    return [(int(r.id), str(r.format)) for r in rows]


def insert_delivery(
    conn: Connection,
    *,
    webhook_id: int,
    project_id: int,
    event: str,
    event_id: str,
    dedupe_key: str | None,
    body: bytes,
) -> int | None:
    """Queue one delivery, due now; None when this webhook had this dedupe key already."""
    row = conn.execute(
        text(
            """
            INSERT INTO webhook_delivery (webhook_id, project_id, event, event_id, dedupe_key, body)
            VALUES (:webhook, :project, :event, :event_id, :key, :body)
            ON CONFLICT (webhook_id, dedupe_key) DO NOTHING
            RETURNING id
            """
        ),
        {
            "webhook": webhook_id,
            "project": project_id,
            "event": event,
            "event_id": event_id,
            "key": dedupe_key,
            "body": body,
        },
    ).first()
    return None if row is None else int(row.id)


def dedupe_key_taken(conn: Connection, project_id: int, event: str, dedupe_key: str) -> bool:
    """True when every webhook hearing `event` has a delivery with this key already."""
    row = conn.execute(
        text(
            """
            SELECT bool_and(EXISTS (
                SELECT 1 FROM webhook_delivery d WHERE d.webhook_id = w.id AND d.dedupe_key = :key
            )) AS done
            FROM webhook w WHERE w.project_id = :project AND :event = ANY(w.events)
            """
        ),
        {"project": project_id, "event": event, "key": dedupe_key},
    ).one()
    return bool(row.done) if row.done is not None else True


def projects_hearing(conn: Connection, event: str) -> list[int]:
    """Ids of the projects with a webhook that hears `event`."""
    rows = conn.execute(
        text("SELECT DISTINCT project_id FROM webhook WHERE :event = ANY(events) ORDER BY 1"),
        {"event": event},
    ).all()
    return [int(r.project_id) for r in rows]


def claim_due(conn: Connection, *, limit: int, lease_s: float) -> list[ClaimedDelivery]:
    """Take up to `limit` due deliveries for one attempt each: counted now, and due again only
    when the lease ends (the sender died), so a crash mid-attempt loses nothing."""
    rows = conn.execute(
        text(
            """
            UPDATE webhook_delivery d
            SET attempts = d.attempts + 1, last_attempt_at = now(),
                next_attempt_at = now() + make_interval(secs => :lease)
            FROM webhook w
            WHERE w.id = d.webhook_id AND d.id IN (
                SELECT id FROM webhook_delivery
                WHERE state = 'pending' AND next_attempt_at <= now()
                ORDER BY next_attempt_at, id LIMIT :limit FOR UPDATE SKIP LOCKED)
            RETURNING d.id, d.attempts, d.event, d.event_id, d.body, w.url, w.secret
            """
        ),
        {"limit": limit, "lease": lease_s},
    ).all()
    return [
        ClaimedDelivery(
            id=int(r.id),
            attempts=int(r.attempts),
            event=str(r.event),
            event_id=str(r.event_id),
            body=bytes(r.body),
            url=str(r.url),
            secret=str(r.secret),
        )
        for r in rows
    ]


def record_attempt(
    conn: Connection,
    delivery_id: int,
    *,
    delivered: bool,
    status: int | None,
    error: str | None,
    retry_in_s: float | None,
) -> None:
    """Write an attempt's outcome: delivered, due again in `retry_in_s`, or failed (None)."""
    state = "delivered" if delivered else "pending" if retry_in_s is not None else "failed"
    conn.execute(
        text(
            """
            UPDATE webhook_delivery SET state = :state, last_status = :status,
                last_error = :error,
                delivered_at = CASE WHEN :state = 'delivered' THEN now() END,
                next_attempt_at = CASE WHEN :state = 'pending'
                    THEN now() + make_interval(secs => :retry) ELSE next_attempt_at END
            WHERE id = :id
            """
        ),
        {
            "id": delivery_id,
            "state": state,
            "status": status,
            "error": error,
            "retry": retry_in_s or 0.0,
        },
    )


def select_deliveries(
    conn: Connection,
    project_id: int,
    *,
    webhook_id: int | None = None,
    state: str | None = None,
    limit: int = 100,
) -> list[DeliveryInfo]:
    """The project's newest deliveries (of one webhook, in one state)."""
    rows = conn.execute(
        text(
            """
            SELECT id, webhook_id, event, event_id, state, attempts,
                CASE WHEN state = 'pending' THEN next_attempt_at END AS next_attempt_at,
                last_attempt_at, last_status, last_error, created_at, delivered_at
            FROM webhook_delivery
            WHERE project_id = :project
              AND (CAST(:webhook AS bigint) IS NULL OR webhook_id = :webhook)
              AND (CAST(:state AS text) IS NULL OR state = :state)
            ORDER BY created_at DESC, id DESC LIMIT :limit
            """
        ),
        {"project": project_id, "webhook": webhook_id, "state": state, "limit": limit},
    ).all()
    return [DeliveryInfo(**row._mapping) for row in rows]
