"""The queue, webhook, token and digest answer models against the typed objects the services
return (and the event data receivers get): a field added, removed or renamed on either side
fails here instead of drifting by hand."""

from __future__ import annotations

import dataclasses
from datetime import date

import pytest
from pydantic import BaseModel

from analysis.changes.listing import ChangeItem
from analysis.ci.runner_commands import JobSelection
from analysis.digest.weekly import Growth, WeeklyDigest
from analysis.queue.report import ClaimRow, NodeRun, QueueReport, RanTwice, StopRow
from app.project_records import TokenInfo
from app.schemas import queues, reads, webhooks
from app.services import queue_answers as answers
from app.services.digest import DigestAnswer
from app.services.webhooks import DeliveryInfo, WebhookInfo
from notify.digest import digest_data
from notify.events import EVENTS, ChangeNotice
from tests.server.test_recommendation_schema_drift import _attributes

# (answer model, typed object, answer field -> attribute where the names differ, attributes
#  the answer leaves out, answer fields that come from elsewhere)
PAIRS: list[tuple[type[BaseModel], type, dict[str, str], set[str], set[str]]] = [
    (queues.QueueItem, answers.QueuedItem, {}, set(), set()),
    (queues.QueueOpened, answers.QueueJoin, {}, set(), set()),
    (queues.QueueSelection, JobSelection, {}, set(), set()),
    (queues.QueueClaim, answers.BatchClaim, {}, set(), set()),
    (queues.QueueHeartbeat, answers.LeaseExtended, {}, set(), set()),
    (queues.QueueBatchStarted, answers.BatchStarted, {}, set(), set()),
    (queues.QueueFinished, answers.BatchFinished, {}, set(), set()),
    (queues.QueueReleased, answers.ClaimsReleased, {}, set(), set()),
    (queues.QueueSummary, answers.QueueListing, {}, set(), set()),
    # A batch is listed under its node.
    (queues.QueueBatch, ClaimRow, {}, {"node"}, set()),
    (queues.QueueNode, NodeRun, {}, set(), set()),
    (queues.BudgetStop, StopRow, {}, set(), set()),
    (queues.RanTwiceModel, RanTwice, {}, set(), set()),
    # The queue's facts, then its report's (below).
    (queues.QueueStatus, answers.QueueState, {}, {"report"}, set(QueueReport.__annotations__)),
    (queues.QueueStatus, QueueReport, {}, set(), set(answers.QueueState.__annotations__)),
    (reads.TokenInfo, TokenInfo, {}, set(), set()),
    (reads.NewToken, TokenInfo, {}, set(), {"token"}),
    (webhooks.Webhook, WebhookInfo, {}, set(), set()),
    (webhooks.NewWebhook, WebhookInfo, {}, set(), {"secret"}),
    (webhooks.Delivery, DeliveryInfo, {}, set(), set()),
    (webhooks.Growth, Growth, {}, set(), set()),
    (webhooks.Digest, WeeklyDigest, {}, set(), {"text"}),
    (webhooks.Digest, DigestAnswer, {}, {"digest"}, set(_attributes(WeeklyDigest))),
]


@pytest.mark.parametrize(
    ("model", "cls", "renamed", "left_out", "derived"),
    PAIRS,
    ids=[f"{m.__name__}-{c.__name__}" for m, c, *_ in PAIRS],
)
def test_answer_model_and_typed_answer_name_the_same_fields(
    model: type[BaseModel],
    cls: type,
    renamed: dict[str, str],
    left_out: set[str],
    derived: set[str],
) -> None:
    answer = {renamed.get(name, name) for name in model.model_fields if name not in derived}
    assert answer == _attributes(cls) - left_out


def test_the_digest_event_carries_the_digest_answer_fields() -> None:
    """The API's digest and the "digest.weekly" event's data are one document, made twice."""
    grown = Growth("t.py::t", 2.0, 1.0, 3, 6.0)
    digest = WeeklyDigest(date(2026, 1, 12), 6.0, 3.0, (grown,), (grown,))
    data = digest_data("p", digest)
    assert list(data) == list(webhooks.Digest.model_fields)
    assert list(data["growing_tests"][0]) == list(webhooks.Growth.model_fields)
    assert set(EVENTS["digest.weekly"].required) <= set(data)


# The change event's fields: ChangeItem's, under the names the event has always used.
CHANGE_NAMES = {"change_id": "id", "subject": "name", "cell": "labels_key"}


def test_the_change_event_names_its_change_fields() -> None:
    fields = {f.name for f in dataclasses.fields(ChangeNotice)}
    assert set(EVENTS["change.detected"].required) <= fields
    assert {CHANGE_NAMES.get(f, f) for f in fields} <= _attributes(ChangeItem)
    assert fields - set(EVENTS["change.detected"].required) == {"runs_before", "job"}
