"""Log lines: JSON that parses into the record's fields, one line per record however hostile
the request, the request id on every line logged while serving it."""

from __future__ import annotations

import json
import logging

import httpx
import pytest

from app.logs import REQUEST_ID, JsonFormatter, RequestIdFilter, TextFormatter, log_config
from app.settings import Settings
from tests.conftest import LiveServer
from tests.server.conftest import wait_for


def _record(message: str, **fields: object) -> logging.LogRecord:
    record = logging.makeLogRecord({"name": "laptime.test", "levelno": 20, "levelname": "INFO"})
    record.msg = message
    record.__dict__.update(fields)
    return record


def test_json_lines_carry_the_fields_and_stay_one_line() -> None:
    record = _record("job\nforged", upload_id=7, job="a\nb", color_message="\x1b[36mx")
    line = JsonFormatter().format(record)
    assert "\n" not in line
    doc = json.loads(line)
    assert doc["message"] == "job\nforged"
    assert doc["upload_id"] == 7
    assert doc["job"] == "a\nb"
    assert doc["level"] == "INFO"
    assert doc["logger"] == "laptime.test"
    assert "color_message" not in doc
    assert doc["time"].endswith("+00:00")


def test_the_request_id_follows_the_request_into_its_log_records() -> None:
    outside = _record("before")
    RequestIdFilter().filter(outside)
    token = REQUEST_ID.set("req-42")
    try:
        inside = _record("during")
        RequestIdFilter().filter(inside)
    finally:
        REQUEST_ID.reset(token)
    assert not hasattr(outside, "request_id")
    assert json.loads(JsonFormatter().format(inside))["request_id"] == "req-42"
    assert TextFormatter().format(inside).endswith("[request req-42]")


def test_format_and_level_come_from_settings() -> None:
    config = log_config(Settings(log_format="json", log_level="warning"))
    assert config["root"]["level"] == "WARNING"
    assert config["formatters"]["laptime"]["()"] == "app.logs.JsonFormatter"
    assert config["loggers"]["uvicorn.access"]["propagate"] is False  # replaced, not doubled
    assert log_config(Settings())["formatters"]["laptime"]["()"] == "app.logs.TextFormatter"
    with pytest.raises(ValueError, match="one of DEBUG"):
        Settings(log_level="loud")


def test_a_hostile_path_and_request_id_cannot_forge_log_lines(
    live_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="laptime.request"):
        answer = httpx.get(
            f"{live_server.url}/x%0A%7B%22forged%22%3A1%7D", headers={"X-Request-ID": "a b\tc"}
        )
        request_id = answer.headers["x-request-id"]

        def mine() -> list[logging.LogRecord]:
            return [r for r in caplog.records if getattr(r, "request_id", None) == request_id]

        # The line is written once the answer has gone out: wait for it.
        wait_for(mine, 10, "the request's log line")
    assert answer.status_code == 404
    assert request_id != "a b\tc"
    (record,) = mine()
    assert record.route == "unmatched"  # type: ignore[attr-defined]
    assert "\n" not in record.path  # type: ignore[attr-defined]
    assert "\n" not in TextFormatter().format(record)
    assert json.loads(JsonFormatter().format(record))["status"] == 404
