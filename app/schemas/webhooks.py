"""Webhook, delivery and weekly digest answer models."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from app.schemas.base import ApiModel
from app.services.digest import DigestAnswer
from app.services.webhooks import DeliveryInfo, WebhookInfo


class Webhook(ApiModel):
    """A registered address: what it hears, in which format; never its secret."""

    id: int
    url: str
    format: str = Field(description='"json" (the signed event envelope) or "slack" ({"text"})')
    events: list[str]
    secret_prefix: str = Field(description="the secret's first characters, to tell them apart")
    created_at: datetime

    @classmethod
    def of(cls, info: WebhookInfo) -> Webhook:
        """The wire form of a registered address."""
        return cls.model_validate(info, from_attributes=True)


class NewWebhook(Webhook):
    """The webhook just registered, with its secret: shown this once."""

    secret: str

    @classmethod
    def of_new(cls, info: WebhookInfo, secret: str) -> NewWebhook:
        """The wire form of a webhook just registered, and its secret."""
        return cls(**Webhook.of(info).model_dump(), secret=secret)


class WebhookList(ApiModel):
    """The project's webhooks."""

    webhooks: list[Webhook]

    @classmethod
    def of(cls, infos: list[WebhookInfo]) -> WebhookList:
        """The wire form of a project's webhooks."""
        return cls(webhooks=[Webhook.of(i) for i in infos])


class WebhookRemoved(ApiModel):
    """The webhook removed (its deliveries with it)."""

    removed: int


class Delivery(ApiModel):
    """One event sent to one webhook: its state and what the last attempt got."""

    id: int
    webhook_id: int
    event: str
    event_id: str
    state: str = Field(description="pending, delivered or failed (gave up)")
    attempts: int
    next_attempt_at: datetime | None = Field(description="when pending: the next try")
    last_attempt_at: datetime | None
    last_status: int | None = Field(description="the receiver's HTTP status, if it answered")
    last_error: str | None
    created_at: datetime
    delivered_at: datetime | None


class DeliveryList(ApiModel):
    """The newest deliveries."""

    deliveries: list[Delivery]

    @classmethod
    def of(cls, infos: list[DeliveryInfo]) -> DeliveryList:
        """The wire form of deliveries."""
        return cls(deliveries=[Delivery.model_validate(d, from_attributes=True) for d in infos])


class Growth(ApiModel):
    """A test or file whose seconds per run grew since the week before."""

    name: str
    seconds_per_run: float
    previous_seconds_per_run: float
    delta_s: float
    runs: int
    total_s: float


class Digest(ApiModel):
    """A week's CI test time against the week before, and what grew most."""

    week: str = Field(description="the week's Monday, YYYY-MM-DD")
    previous_week: str
    ci_time_s: float
    previous_ci_time_s: float
    delta_s: float
    growing_tests: list[Growth]
    growing_files: list[Growth]
    text: str = Field(description="the digest as markdown")

    @classmethod
    def of(cls, answer: DigestAnswer) -> Digest:
        """The wire form of a digest (weeks as YYYY-MM-DD)."""
        digest = answer.digest
        return cls(
            week=digest.week.isoformat(),
            previous_week=digest.previous_week.isoformat(),
            ci_time_s=digest.ci_time_s,
            previous_ci_time_s=digest.previous_ci_time_s,
            delta_s=digest.delta_s,
            growing_tests=[
                Growth.model_validate(g, from_attributes=True) for g in digest.growing_tests
            ],
            growing_files=[
                Growth.model_validate(g, from_attributes=True) for g in digest.growing_files
            ],
            text=answer.text,
        )
