"""Answers of the upload endpoints."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from app.schemas.base import ApiModel

UploadStatus = Literal["queued", "processing", "done", "failed"]


class UploadReceipt(ApiModel):
    """An upload stored (202) or recognised as a repeat (200)."""

    id: int
    status: UploadStatus
    url: str = Field(description="where to poll the upload's status")
    duplicate: bool
    requeued: bool = Field(description="a repeat of a failed upload, put back in the queue")


class Requeued(ApiModel):
    """A failed upload put back in the queue."""

    id: int
    status: Literal["queued"]
    url: str
    requeued: Literal[True]


class UploadedFile(ApiModel):
    """One report file of an upload."""

    filename: str
    size_bytes: int


class RunMetadata(ApiModel):
    """The run metadata sent with the upload, as stored. Uploads stored by older versions may
    lack fields, hence every one is optional; unknown keys are kept (extra allowed)."""

    model_config = ConfigDict(extra="allow")

    job: str | None = None
    commit: str | None = None
    branch: str | None = None
    pipeline: str | None = None
    machine: str | None = None
    pull_request: str | None = None
    runner_os: str | None = None
    plan_id: str | None = None
    labels: dict[str, str] | None = None
    started_at: str | None = None
    wall_s: float | None = None
    peak_rss_mib: float | None = None
    backfill: bool | None = None
    runner: str | None = None


COUNTS_TEXT = (
    "what the ingest stored (files, results, new_tests, hidden_rows, ...); null until done"
)


class UploadDocument(ApiModel):
    """The status of one upload: queued, processing, done (with counts) or failed (with the
    error code and detail)."""

    id: int
    project_id: int
    status: UploadStatus
    counts: dict[str, int] | None = Field(description=COUNTS_TEXT)
    warnings: list[str] = Field(description="what the parsers and the store fixed or guessed")
    error_code: str | None = Field(description="docs/errors.md; set when failed")
    error_detail: str | None
    attempts: int
    created_at: str = Field(description="ISO 8601")
    finished_at: str | None = Field(description="ISO 8601")
    run_id: int | None
    metadata: RunMetadata
    files: list[UploadedFile]


class UploadSummary(ApiModel):
    """One line of a project's upload list."""

    id: int
    status: UploadStatus
    job: str | None
    error_code: str | None
    error_detail: str | None
    created_at: str
    finished_at: str | None
    counts: dict[str, int] | None = Field(description=COUNTS_TEXT)


class UploadList(ApiModel):
    """The latest uploads of a project, newest first."""

    uploads: list[UploadSummary]
