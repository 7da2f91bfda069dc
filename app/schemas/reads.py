"""Answers of a project's read endpoints: rollups, pipelines, jobs, trend; its tokens."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from app.project_records import TokenInfo as TokenRecord
from app.schemas.base import ApiModel


class Completeness(ApiModel):
    """How much of the window's data the numbers stand on."""

    results: int
    without_duration: int
    runs: int
    partial_runs: int
    hidden_rows: int
    partial_runs_unknown: int
    complete: bool


class RollupRow(ApiModel):
    """One key of the dimension (analysis.rollups.shares.ROW_COLUMNS); null where unknown."""

    key: str | None
    runs: int | None
    total_s: float | None
    share: float | None = Field(description="of the grand total")
    mean_s: float | None
    p50_s: float | None
    p95_s: float | None
    max_s: float | None
    failures: int | None
    flaky: int | None
    tests: int | None
    setup_s: float | None
    call_s: float | None
    teardown_s: float | None
    missing: int | None = Field(description="results without a known duration")
    parent: str | None = Field(description="the key's main parent in the `within` dimension")
    parent_share: float | None = Field(description="of the parent's total")


class Rollup(ApiModel):
    """Test time split by a dimension, largest first (or as sorted)."""

    by: str
    within: str | None
    grand_total_s: float
    keys_total: int = Field(description="keys before the limit")
    completeness: Completeness
    rows: list[RollupRow]


class TrendDay(ApiModel):
    """One day of pipelines (the day of each pipeline's first job)."""

    day: str | None = Field(description="ISO 8601")
    pipelines: int | None
    jobs: int | None
    wait_p50_s: float | None
    wait_max_s: float | None
    machine_s: float | None
    test_s: float | None
    estimated_walls: int | None
    setup_overhead_s: float | None


class PipelineRow(ApiModel):
    """One pipeline run: its wait (longest job) and machine time (sum of job walls)."""

    pipeline: str | None
    started_at: str | None = Field(description="ISO 8601")
    day: str | None = Field(description="ISO 8601")
    branch: str | None
    commit: str | None
    jobs: int | None
    wait_s: float | None
    machine_s: float | None
    test_s: float | None
    setup_overhead_s: float | None
    critical_job: str | None
    estimated_walls: int | None


class Pipelines(ApiModel):
    """Pipeline runs, newest first, and the daily trend."""

    runs: int
    estimated_walls: int = Field(description="job walls estimated from test time")
    runs_without_pipeline: int
    pipelines: list[PipelineRow]
    trend: list[TrendDay]


class JobRow(ApiModel):
    """One CI job: runs, median wall and test time, setup overhead."""

    job: str | None
    machine: str | None
    runs: int | None
    wall_p50_s: float | None
    wall_max_s: float | None
    test_p50_s: float | None
    test_wall_p50_s: float | None
    setup_overhead_p50_s: float | None
    setup_share: float | None
    machine_s: float | None
    estimated_walls: int | None


class Jobs(ApiModel):
    """Per job."""

    jobs: list[JobRow]


class Trend(ApiModel):
    """Per day."""

    days: list[TrendDay]


class TokenInfo(ApiModel):
    """A token's public facts; never its secret."""

    id: int
    project: str
    scope: Literal["upload", "read", "admin"]
    prefix: str = Field(description="its first characters, to recognise it")
    created_at: str
    expires_at: str | None
    revoked_at: str | None
    active: bool

    @classmethod
    def of(cls, info: TokenRecord) -> TokenInfo:
        """The wire form of a token's facts (timestamps in ISO 8601, as Python writes them)."""

        def iso(at: datetime | None) -> str | None:
            return None if at is None else at.isoformat()

        return cls(
            id=info.id,
            project=info.project,
            scope=info.scope,  # type: ignore[arg-type]
            prefix=info.prefix,
            created_at=info.created_at.isoformat(),
            expires_at=iso(info.expires_at),
            revoked_at=iso(info.revoked_at),
            active=info.active,
        )


class NewToken(TokenInfo):
    """A token just created, with its secret (shown this once)."""

    token: str

    @classmethod
    def of_new(cls, info: TokenRecord, token: str) -> NewToken:
        """The wire form of a token just issued, and its secret."""
        return cls(**TokenInfo.of(info).model_dump(), token=token)


class TokenList(ApiModel):
    """The project's tokens."""

    tokens: list[TokenInfo]

    @classmethod
    def of(cls, infos: list[TokenRecord]) -> TokenList:
        """The wire form of a project's tokens."""
        return cls(tokens=[TokenInfo.of(i) for i in infos])


class Revoked(ApiModel):
    """A token revoked."""

    revoked: int
