"""Answer and request models of the quarantine endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from analysis.flaky.quarantine import QuarantineState
from analysis.flaky.quarantine_export import QuarantineExport
from app.schemas.base import ApiModel

# As long as any stored nodeid (names are cut at 2000 bytes); no NUL bytes.
Nodeid = Annotated[str, StringConstraints(min_length=1, max_length=4096, pattern=r"^[^\x00]*$")]


class QuarantineAdd(ApiModel):
    """A test to quarantine: it still runs and reports, its failures do not fail the job."""

    nodeid: Nodeid
    reason: Annotated[str, StringConstraints(max_length=500, pattern=r"^[^\x00]*$")] = ""
    expires_in_days: float | None = Field(
        default=None, gt=0, le=3650, description="the entry ends this many days from now"
    )
    release_after_runs: int | None = Field(
        default=None, ge=1, le=10_000, description="the entry ends after this many clean passes"
    )


class FlakyResetBody(ApiModel):
    """Restart a test's flaky statistics (a fix landed)."""

    nodeid: Nodeid
    since: datetime | None = Field(default=None, description="default: now")


class QuarantineItem(ApiModel):
    """A quarantine entry and what became of it."""

    id: int
    nodeid: str
    reason: str
    created_at: datetime
    expires_at: datetime | None
    release_after_runs: int | None
    removed_at: datetime | None
    state: Literal["active", "expired", "released", "removed"]
    ended_at: datetime | None
    stable_runs: int = Field(description="clean passes in a row while it held")
    quarantined_failures: int = Field(description="failures in runs started while it held")

    @classmethod
    def of(cls, state: QuarantineState) -> QuarantineItem:
        """The answer form of an entry's state."""
        e = state.entry
        return cls(
            id=e.id,
            nodeid=e.nodeid,
            reason=e.reason,
            created_at=e.created_at,
            expires_at=e.expires_at,
            release_after_runs=e.release_after_runs,
            removed_at=e.removed_at,
            state=state.state,
            ended_at=state.ended_at,
            stable_runs=state.stable_runs,
            quarantined_failures=state.quarantined_failures,
        )


class QuarantineList(ApiModel):
    """The quarantine: `active` lists the tests quarantined now; `entries` every entry."""

    active: list[str]
    entries: list[QuarantineItem]


class Selection(ApiModel):
    """A runner's arguments and, where laptime knows it, the whole command."""

    runner: str
    args: list[str]
    command: str


class QuarantineExportAnswer(ApiModel):
    """A quarantine in a runner's words: the gating run and the non-failing quarantine run."""

    runner: str
    quarantined: list[str]
    gating: Selection = Field(description="every known test but the quarantined")
    quarantine: Selection = Field(description="the quarantined tests; do not fail the job")
    still_gating: list[str] = Field(
        description="quarantined tests a file-only runner cannot leave out of the gating run"
    )

    @classmethod
    def of(cls, export: QuarantineExport) -> QuarantineExportAnswer:
        """The answer form of an export."""
        return cls(
            runner=export.runner,
            quarantined=list(export.quarantined),
            gating=Selection.model_validate(export.gating, from_attributes=True),
            quarantine=Selection.model_validate(export.quarantine, from_attributes=True),
            still_gating=list(export.still_gating),
        )
