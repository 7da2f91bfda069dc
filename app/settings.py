"""The one Settings object, read from the environment by each entry point and passed down."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from notify.retry import RetryPolicy


def default_home() -> Path:
    """Per-user data directory used when LAPTIME_HOME is unset."""
    return Path.home() / ".local" / "share" / "laptime"


class Settings(BaseSettings):
    """Service configuration. DATABASE_URL unset means an embedded Postgres under `home`."""

    model_config = SettingsConfigDict(env_prefix="LAPTIME_", extra="ignore")

    database_url: str | None = Field(
        default=None, validation_alias=AliasChoices("DATABASE_URL", "LAPTIME_DATABASE_URL")
    )
    home: Path = Field(default_factory=default_home)
    host: str = "127.0.0.1"
    port: int = 8000
    # One limit on a report's content whatever the transport: a plain report may be as large
    # as a gzipped one inflates to, so the request limit defaults to the report limit (the
    # worker refuses a gzip inflating past max_report_bytes with decompressed-too-large).
    max_report_bytes: int = 500 * 1024 * 1024
    max_upload_bytes: int = 500 * 1024 * 1024
    # A poison upload (crashes the worker every time) fails after this many claims.
    max_attempts: int = 3
    worker_poll_s: float = 5.0
    # Workers write a heartbeat this often; a claim silent for worker_lease_s is taken over.
    worker_heartbeat_s: float = 5.0
    worker_lease_s: float = 60.0
    # A worker ingests up to this many queued uploads of one project in one transaction
    # (docs/operations.md); 1 ingests each alone.
    worker_batch_uploads: int = Field(default=8, ge=1, le=64)
    # While a batch is stored, a thread of the worker parses the next claim's uploads
    # (docs/operations.md); off parses each upload after its claim.
    worker_parse_ahead: bool = True
    # On SIGTERM a worker finishes its ingest if it can within this, else rolls it back.
    worker_stop_grace_s: float = 3.0
    # /readyz fails when no worker has beaten for this long.
    ready_heartbeat_max_age_s: float = 30.0
    # Failed authentications one client address may make per window before it gets 429s.
    auth_failures: int = 30
    auth_failure_window_s: float = 60.0
    # Read deadlines (docs/operations.md): a request's head must arrive within
    # header_timeout_s of its first byte (or of the connection), and its body must move at
    # least every body_timeout_s; else 408 and the connection is closed.
    header_timeout_s: float = Field(default=10.0, gt=0)
    body_timeout_s: float = Field(default=30.0, gt=0)
    # Frames kept between requests, for the whole deployment: each of `web_processes` web
    # processes keeps its share (`laptime serve --workers N` sets LAPTIME_WEB_PROCESSES).
    frame_cache_mib: int = Field(default=256, ge=1)
    web_processes: int = Field(default=1, ge=1)
    # Refresh the rollups readers asked for lately after each commit, off the request path.
    warm_reads: bool = True
    # Logs (docs/operations.md): `text` for a terminal, `json` for a log pipeline.
    log_format: Literal["text", "json"] = "text"
    log_level: str = "INFO"
    # /metrics is open like /healthz unless this is set; then it wants `Bearer <token>`.
    metrics_token: SecretStr | None = None
    # A `laptime worker` serves its own metrics on this port when set (a worker that shares
    # no PROMETHEUS_MULTIPROC_DIR with a web process, e.g. in its own container).
    worker_metrics_port: int | None = None
    # Webhook deliveries (docs/webhooks.md), sent by the worker processes: tries per delivery,
    # the first retry's delay (doubling each time, capped), each attempt's time limit, and how
    # often a worker looks for due deliveries and weekly digests.
    webhook_max_attempts: int = Field(default=8, ge=1, le=100)
    webhook_first_delay_s: float = Field(default=30.0, ge=0)
    webhook_max_delay_s: float = Field(default=6 * 3600.0, ge=0)
    webhook_timeout_s: float = Field(default=10.0, gt=0, le=300)
    webhook_poll_s: float = Field(default=2.0, gt=0)
    # Webhooks to loopback, private, link-local... addresses are refused (they would let an
    # admin token reach the server's own network) unless the operator says they are wanted.
    webhook_allow_private: bool = False

    @field_validator("log_level")
    @classmethod
    def _known_level(cls, value: str) -> str:
        level = value.strip().upper()
        if not isinstance(logging.getLevelName(level), int):
            raise ValueError("one of DEBUG, INFO, WARNING, ERROR, CRITICAL")
        return level

    @property
    def webhook_policy(self) -> RetryPolicy:
        """How webhook deliveries are tried."""
        return RetryPolicy(
            max_attempts=self.webhook_max_attempts,
            first_delay_s=self.webhook_first_delay_s,
            max_delay_s=self.webhook_max_delay_s,
            timeout_s=self.webhook_timeout_s,
            allow_private=self.webhook_allow_private,
        )

    @property
    def frame_cache_bytes(self) -> int:
        """This web process's share of the deployment's frame budget."""
        return self.frame_cache_mib * 1024 * 1024 // self.web_processes

    @property
    def pgdata(self) -> Path:
        """Where the embedded server keeps its data."""
        return self.home / "pgdata"
