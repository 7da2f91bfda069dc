"""Log lines: one stdlib logging setup for the web processes and the workers, text or JSON.

`LAPTIME_LOG_FORMAT=json` writes one JSON object per line with the record's structured fields
(`extra=`) as keys, so a log pipeline needs no parsing rules; `text` stays readable in a
terminal. The request id of the request being served (app.http.request_observer) is added to
every record logged while serving it, whichever thread logs it (the context variable follows
the request into the thread pool). Nothing here ever sees a token: no header, form field or
query string is logged.
"""

from __future__ import annotations

import json
import logging
import logging.config
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any

from app.settings import Settings

LOG_FORMATS = ("text", "json")
REQUEST_ID: ContextVar[str | None] = ContextVar("laptime_request_id", default=None)
# Attributes every LogRecord has; anything else on a record came from `extra=` and is a field
# (but uvicorn's color_message: the message again, with terminal escapes).
_RECORD_ATTRS = frozenset(logging.makeLogRecord({}).__dict__) | {
    "message",
    "asctime",
    "color_message",
}


def record_fields(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields a record carries (its `extra=` keys and the request id)."""
    return {k: v for k, v in record.__dict__.items() if k not in _RECORD_ATTRS}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, pid, message, then the record's fields."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "pid": record.process,
            "message": record.getMessage(),
        }
        doc.update(record_fields(record))
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            doc["stack"] = self.formatStack(record.stack_info)
        # default=str: a field of an unexpected type is written, never a lost line.
        return json.dumps(doc, default=str, ensure_ascii=False)


class TextFormatter(logging.Formatter):
    """The classic line, with the request id appended when there is one."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        request_id = getattr(record, "request_id", None)
        return f"{line} [request {request_id}]" if request_id else line


class RequestIdFilter(logging.Filter):
    """Stamp the current request's id on records logged while it is served."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "request_id"):
            request_id = REQUEST_ID.get()
            if request_id is not None:
                record.request_id = request_id
        return True


def log_config(settings: Settings) -> dict[str, Any]:
    """A logging.config.dictConfig document: one stderr handler on the root logger.

    uvicorn's own loggers propagate to it; its access log is off (the request observer writes
    the one line per request). A plain dict, so uvicorn can hand it to worker processes.
    """
    formatter = f"app.logs.{'Json' if settings.log_format == 'json' else 'Text'}Formatter"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"laptime": {"()": formatter}},
        "filters": {"request_id": {"()": "app.logs.RequestIdFilter"}},
        "handlers": {
            "stderr": {
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stderr",
                "formatter": "laptime",
                "filters": ["request_id"],
            }
        },
        "root": {"level": settings.log_level, "handlers": ["stderr"]},
        "loggers": {
            "uvicorn": {"handlers": [], "propagate": True},
            "uvicorn.error": {"handlers": [], "propagate": True},
            "uvicorn.access": {"handlers": [], "propagate": False},
        },
    }


def configure_logging(settings: Settings) -> None:
    """Install the configuration for this process (entry points call it once)."""
    logging.config.dictConfig(log_config(settings))


def uvicorn_logging(settings: Settings) -> dict[str, Any]:
    """uvicorn.Config / uvicorn.run keywords applying the same configuration in every web
    process uvicorn starts, its access log off."""
    return {
        "log_config": log_config(settings),
        "log_level": settings.log_level.lower(),
        "access_log": False,
    }
