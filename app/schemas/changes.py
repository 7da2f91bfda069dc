"""The changes answer models (docs/changes.md)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from app.schemas.base import ApiModel
from app.services.changes import ChangesAnswer, ChangeSeries, DefaultBranch, StateSet

ChangeState = Literal["open", "acknowledged", "resolved"]
# The series kinds (docs/changes.md): a test, a parametrized function, a file, a cell's job
# wall, the pipeline's wall and machine time (key `wall` or `machine`).
ChangeKind = Literal["test", "function", "file", "job", "pipeline"]
# How a list is ranked (analysis.changes.listing.CHANGE_SORTS).
ChangeSort = Literal["per_run", "per_week", "cost"]


class BisectStepModel(ApiModel):
    """Check out `commit` and run `command` (shell words quoted) to see whether it is slower."""

    commit: str
    command: str


class ChangeModel(ApiModel):
    """A lasting step in a duration series of the default branch, with its commit range."""

    id: int
    kind: ChangeKind
    name: str = Field(
        description="the test nodeid, function key, file path, job name, or for a pipeline "
        "`pipeline wall` or `pipeline machine time`"
    )
    test: str | None
    file: str | None
    job: str
    machine: str
    branch: str
    labels_key: str
    state: ChangeState
    state_at: datetime | None
    commit_before: str | None = Field(description="the last run's commit before the step")
    commit_after: str | None = Field(description="the first run's commit after the step")
    at_before: datetime
    at_after: datetime
    pipeline_after: str | None
    runs_before: int
    runs_after: int
    median_before_s: float
    median_after_s: float
    spread_before_s: float = Field(description="interquartile range / 1.349 before")
    spread_after_s: float
    delta_s: float = Field(description="seconds added per run (negative: saved)")
    relative: float = Field(description="the change as a share of the time before")
    sigmas: float = Field(description="the change in units of the series' own noise")
    z: float = Field(description="the rank statistic at the step (+: slower after)")
    between: list[str] | None = Field(
        description="commits strictly between commit_before and commit_after, oldest first, "
        "from the client's first-parent history; null: not known"
    )
    between_complete: bool = Field(description="the history reached commit_before")
    bisect: list[BisectStepModel] = Field(
        description="where commits lie between: what to run at each candidate commit"
    )
    detected_at: datetime
    per_week_s: float | None = Field(
        description="machine seconds added a week: delta_s x how often the cell (for a "
        "pipeline's change, the default branch's pipelines) ran over the last 4 weeks"
    )
    per_week_cost: float | None = Field(
        description="dollars added a week, where the project's catalogue prices the machine"
    )
    pull_requests: list[str] = Field(
        description="the pull or merge requests that brought the commits in (before, after], "
        "oldest first, where their messages name one (laptime-ci reads them from git) or the "
        "first run after was a request's own (a merge queue's or merge train's)"
    )


class ChangeList(ApiModel):
    """The project's changes, the most added first (per run, per week or in money: `sort`)."""

    default_branch: str | None
    changes: list[ChangeModel]

    @classmethod
    def of(cls, answer: ChangesAnswer) -> ChangeList:
        """The wire form of the service's answer (each change read from its attributes)."""
        return cls(
            default_branch=answer.default_branch,
            changes=[ChangeModel.model_validate(c, from_attributes=True) for c in answer.changes],
        )


class SeriesRunModel(ApiModel):
    """One run's point in a change's series, as detection took it at ingest."""

    run_id: int
    commit: str | None
    started_at: datetime
    duration_s: float = Field(description="seconds, on a quiet machine where CPU was recorded")
    after: bool = Field(description="the first run after the step, or a later one")


class ChangeSeriesModel(ApiModel):
    """A change and its series' points on either side of the step (up to 40 runs each)."""

    change: ChangeModel
    points: list[SeriesRunModel]

    @classmethod
    def of(cls, answer: ChangeSeries) -> ChangeSeriesModel:
        """The wire form of a change's series."""
        return cls(
            change=ChangeModel.model_validate(answer.change, from_attributes=True),
            points=[SeriesRunModel.model_validate(p, from_attributes=True) for p in answer.points],
        )


class ChangeStateRequest(BaseModel):
    """A change's new state."""

    state: ChangeState


class ChangeStateSet(ApiModel):
    """The change whose state was set."""

    id: int
    state: ChangeState

    @classmethod
    def of(cls, done: StateSet) -> ChangeStateSet:
        """The wire form of a state set."""
        return cls.model_validate(done, from_attributes=True)


class DefaultBranchRequest(BaseModel):
    """The branch to watch; null detects it again (main, master, trunk, develop, else the
    branch with the most cells)."""

    model_config = ConfigDict(extra="forbid")

    branch: (
        Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[^\x00]*$")]
        | None
    )


class DefaultBranchSet(ApiModel):
    """The watched branch, and the admins' name for it (null: detected)."""

    override: str | None
    default_branch: str | None

    @classmethod
    def of(cls, chosen: DefaultBranch) -> DefaultBranchSet:
        """The wire form of the watched branch."""
        return cls.model_validate(chosen, from_attributes=True)
