"""The events laptime sends and the bytes of each delivery.

Every delivery body is one JSON envelope (format "json"):

    {"id": "<event id>", "event": "change.detected", "project": "<slug>",
     "created_at": "2026-12-04T21:00:00+00:00", "data": {...}}

or, for a Slack-compatible receiver (format "slack"), `{"text": "<the event in a line or a
digest>"}`. The body is made once, when the event is queued, so every retry sends (and signs)
the same bytes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from analysis.errors import AnswerError

FORMATS = ("json", "slack")


class EventError(AnswerError):
    """An event name laptime does not send, or a payload without the event's fields."""


@dataclass(frozen=True)
class EventKind:
    """One event: what it means, the fields its `data` must carry and its one-line text."""

    name: str
    description: str
    required: Mapping[str, tuple[type, ...]]
    text: Callable[[str, Mapping[str, Any]], str]


@dataclass(frozen=True)
class ChangeNotice:
    """The data of a "change.detected" event: one stored change (EVENTS names the fields a
    receiver can count on; `runs_before` and `job` come too)."""

    change_id: int
    kind: str
    subject: str  # the nodeid, file, job or pipeline it is about
    cell: str  # the matrix cell (labels key), "" for none
    median_before_s: float
    median_after_s: float
    delta_s: float  # seconds added per run (negative: saved)
    commit_before: str | None
    commit_after: str | None
    runs_before: int
    job: str


# An event's data: a notice, or the fields themselves (what a digest or a test sends).
EventData = ChangeNotice | Mapping[str, Any]


def event_fields(data: EventData) -> Mapping[str, Any]:
    """The fields of an event's data, as its envelope carries them."""
    return asdict(data) if isinstance(data, ChangeNotice) else data


def slack_escape(value: object) -> str:
    """A report string made inert in Slack mrkdwn: no links, mentions or code spans."""
    text = str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return text.replace("`", "'").replace("\n", " ")


def _change_text(project: str, data: Mapping[str, Any]) -> str:
    delta = float(data["delta_s"])
    way = "slower" if delta > 0 else "faster"
    commit = str(data.get("commit_after") or "")[:12] or "an unknown commit"
    line = (
        f"laptime {slack_escape(project)}: {slack_escape(data['kind'])} "
        f"`{slack_escape(data['subject'])}` got {abs(delta):.2f}s {way} per run "
        f"({float(data['median_before_s']):.2f}s -> {float(data['median_after_s']):.2f}s) "
        f"since commit {slack_escape(commit)}"
    )
    url = data.get("url")
    return f"{line} <{slack_escape(url)}|details>" if url else line


def _digest_text(project: str, data: Mapping[str, Any]) -> str:
    return str(data["text"])


_NUMBER = (int, float)
_TEXT = (str,)
_OPTIONAL_TEXT = (str, type(None))

EVENTS: dict[str, EventKind] = {
    kind.name: kind
    for kind in (
        EventKind(
            "change.detected",
            "a lasting step in a test's, file's, job's or pipeline's duration on the default "
            "branch, sent once per change",
            {
                "change_id": (str, int),
                "kind": _TEXT,  # test, function, file, job, pipeline
                "subject": _TEXT,  # the nodeid, file, job or pipeline it is about
                "cell": _TEXT,  # the matrix cell (labels key), "" for none
                "median_before_s": _NUMBER,
                "median_after_s": _NUMBER,
                "delta_s": _NUMBER,  # seconds added per run (negative: saved)
                "commit_before": _OPTIONAL_TEXT,  # last run before the step
                "commit_after": _OPTIONAL_TEXT,  # first run after it
            },
            _change_text,
        ),
        EventKind(
            "digest.weekly",
            "the week's CI time against the week before and the tests and files that grew most",
            {
                "week": _TEXT,
                "ci_time_s": _NUMBER,
                "previous_ci_time_s": _NUMBER,
                "growing_tests": (list,),
                "growing_files": (list,),
                "text": _TEXT,
            },
            _digest_text,
        ),
    )
}


def check_event(event: str, data: Mapping[str, Any]) -> EventKind:
    """The event's kind when `data` carries its fields with the right types, else EventError."""
    kind = EVENTS.get(event)
    if kind is None:
        raise EventError(f"no event {event!r}; events: {', '.join(EVENTS)}")
    for field, types in kind.required.items():
        if field not in data:
            raise EventError(f"{event} needs data field {field!r}")
        value = data[field]
        if not isinstance(value, types) or isinstance(value, bool):
            raise EventError(f"{event}: {field!r} must be {' or '.join(t.__name__ for t in types)}")
    return kind


def _finite(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null (JSON has no such numbers)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def envelope(
    event: str, project: str, data: Mapping[str, Any], *, event_id: str, created_at: datetime
) -> dict[str, Any]:
    """The JSON envelope of one event."""
    check_event(event, data)
    return {
        "id": event_id,
        "event": event,
        "project": project,
        "created_at": created_at.isoformat(),
        "data": _finite(dict(data)),
    }


def delivery_body(message: Mapping[str, Any], fmt: str) -> bytes:
    """The bytes sent to a receiver of format `fmt` (the envelope, or Slack's `text`)."""
    if fmt == "slack":
        kind = EVENTS[str(message["event"])]
        payload: Mapping[str, Any] = {"text": kind.text(str(message["project"]), message["data"])}
    elif fmt == "json":
        payload = message
    else:
        raise EventError(f"format must be one of {', '.join(FORMATS)}")
    return json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
