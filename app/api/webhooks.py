"""Webhooks (admin token): register, list and remove addresses, see deliveries; and the
weekly digest (read token)."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query
from pydantic import BaseModel, Field

from app.http.deps import AdminProject, ConnDep, ReadProject, SettingsDep
from app.http.params import DATE_MAX, DATE_MIN, ROW_ID_MAX, IsoDate, invalid
from app.http.responses import PROJECT_ERRORS, answers
from app.schemas.webhooks import (
    DeliveryList,
    Digest,
    NewWebhook,
    WebhookList,
    WebhookRemoved,
)
from app.services.digest import digest_answer
from app.services.webhooks import add_webhook, list_deliveries, list_webhooks, remove_webhook

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["webhooks"])


class WebhookRequest(BaseModel):
    """An address to register."""

    url: str = Field(
        max_length=2000,
        # What notify/targets.py accepts, said in the schema: http(s), a host, printable ASCII.
        pattern=r"^https?://[A-Za-z0-9.\[\]:-]+(?::[1-9][0-9]{0,3})?(?:[/?#][!-~]*)?$",
        description="http or https only, no credentials; redirects are not followed",
    )
    events: list[Literal["change.detected", "digest.weekly"]] | None = Field(
        default=None, max_length=10, description="the events it hears (default: all)"
    )
    format: Literal["json", "slack"] = "json"
    secret: str | None = Field(
        default=None,
        pattern=r"^[!-~]{16,200}$",
        description="16 to 200 printable ASCII characters; default: a new random one",
    )


@router.post("/webhooks", status_code=201, **answers(NewWebhook, 400, *PROJECT_ERRORS))
def create_webhook(
    project: AdminProject, conn: ConnDep, settings: SettingsDep, body: WebhookRequest
) -> NewWebhook:
    """Register a webhook (admin token). The answer holds its secret, this once: every
    delivery carries `X-Laptime-Signature: sha256=<HMAC-SHA256 of the body>` under it.
    Hosts that are or resolve to private, loopback or link-local addresses are refused (422)
    unless the server allows them."""
    info, secret = add_webhook(
        conn,
        project,
        body.url,
        events=body.events,
        fmt=body.format,
        secret=body.secret,
        allow_private=settings.webhook_allow_private,
    )
    return NewWebhook.of_new(info, secret)


@router.get("/webhooks", **answers(WebhookList, *PROJECT_ERRORS))
def read_webhooks(project: AdminProject, conn: ConnDep) -> WebhookList:
    """The project's webhooks (admin token), secrets left out."""
    return WebhookList.of(list_webhooks(conn, project))


@router.delete("/webhooks/{webhook_id}", **answers(WebhookRemoved, *PROJECT_ERRORS))
def delete_webhook(
    project: AdminProject,
    conn: ConnDep,
    webhook_id: Annotated[int, Path(ge=1, le=ROW_ID_MAX)],
) -> WebhookRemoved:
    """Remove a webhook and its deliveries (admin token)."""
    remove_webhook(conn, project, webhook_id)
    return WebhookRemoved(removed=webhook_id)


@router.get("/webhook-deliveries", **answers(DeliveryList, *PROJECT_ERRORS))
def read_deliveries(
    project: AdminProject,
    conn: ConnDep,
    webhook: Annotated[int | None, Query(ge=1, le=ROW_ID_MAX)] = None,
    state: Literal["pending", "delivered", "failed"] | None = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> DeliveryList:
    """The newest deliveries (admin token): state, attempts, the receiver's last answer."""
    found = list_deliveries(conn, project, webhook_id=webhook, state=state, limit=limit)
    return DeliveryList.of(found)


@router.get("/digest", **answers(Digest, *PROJECT_ERRORS))
def read_digest(
    project: ReadProject,
    conn: ConnDep,
    week: Annotated[
        IsoDate,
        Query(
            description=f"a day of the week wanted, {DATE_MIN} to {DATE_MAX} (default: the "
            "last week that has ended)"
        ),
    ] = None,
) -> Digest:
    """The weekly digest: CI test time against the week before, the tests and files that
    grew most per run, and the same as markdown."""
    if week is not None and not DATE_MIN <= week <= DATE_MAX:
        raise invalid("week", f"must be between {DATE_MIN} and {DATE_MAX}", week.isoformat())
    return Digest.of(digest_answer(conn, project, week))
