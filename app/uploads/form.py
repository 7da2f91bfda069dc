"""The upload form's text fields: typed, bounded and free of control characters.

The limits live here only; docs/errors.md lists them and a test keeps the two in step.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field

from app.http.text_bounds import FIELD_MAX_CHARS
from app.services.uploads import UploadMetadata
from ingest.parsers.runners import RUNNERS
from laptime_ci.labels import parse_labels, split_label

# started_at must fall in [EARLIEST_START, now + START_SLACK]: a clock a day ahead is a
# misconfigured runner, not a reason to lose its report; anything else is a bug in the sender.
EARLIEST_START = datetime(1970, 1, 1, tzinfo=UTC)
START_SLACK = timedelta(days=1)
# Control characters (NUL, escapes, newlines) and lone surrogates: Postgres text cannot hold
# NUL, and the rest only serves to forge log lines or break the pages that show the value.
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cs"})


def _printable(value: str) -> str:
    for char in value:
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES:
            raise ValueError(f"control character U+{ord(char):04X} is not allowed")
    return value


def _label(value: str) -> str:
    key, label_value = split_label(_printable(value))
    for part, text in (("label key", key), ("label value", label_value)):
        if len(text) > FIELD_MAX_CHARS[part]:
            raise ValueError(f"{part} is longer than {FIELD_MAX_CHARS[part]} characters")
    return value


# ISO 8601 date and time (seconds, fraction and offset optional): pydantic alone would also
# take `0` or `1700000000` (a Unix time) or a bare date, which the schema's date-time is not.
_ISO_DATE_TIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}([.,][0-9]{1,9})?)?"
    r"([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)?"
)


def _iso_date_time(value: object) -> object:
    """Only an ISO 8601 date and time is a `started_at` on the wire."""
    if isinstance(value, str) and not _ISO_DATE_TIME.fullmatch(value):
        raise ValueError(
            "must be an ISO 8601 date and time like 2026-12-04T09:00:00Z (UTC when no offset)"
        )
    return value


def _in_range(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # a CI clock without an offset is UTC
    if not EARLIEST_START <= value <= datetime.now(UTC) + START_SLACK:
        raise ValueError(f"must be between {EARLIEST_START.date()} and tomorrow")
    return value


def _runner(value: str | None) -> str | None:
    """A RUNNERS name; "" and "auto" mean: detect it from each report."""
    if value in (None, "", "auto"):
        return None
    if value not in RUNNERS:
        raise ValueError(f"unknown runner; one of {', '.join(RUNNERS)}")
    return value


def _form_bool(value: object) -> object:
    """`true` or `false` (what the schema's boolean is on the wire); pydantic would also take
    `1`, `on` or `yes`."""
    if isinstance(value, str) and value.lower() not in ("true", "false"):
        raise ValueError("must be true or false")
    return value


# Commits of first-parent history one upload may send (the client sends 50).
MAX_FIRST_PARENTS = 50

# Fields that are not text: a form cannot send null, and an empty value is the field not
# given (FastAPI answers it with the default), so their schema admits "" too.
_NOT_TEXT = ("started_at", "wall_s", "peak_rss_mib", "job_wall_s", "backfill")


def _empty_is_unset(schema: dict[str, Any]) -> None:
    """Model schema hook: the non-text fields also take an empty string (not given)."""
    for name in _NOT_TEXT:
        field = schema["properties"][name]
        options = field.pop("anyOf", None) or [{"type": field.pop("type")}]
        field["anyOf"] = [*options, {"enum": [""]}]


def _text(name: str, description: str) -> Any:
    return Field(default=None, max_length=FIELD_MAX_CHARS[name], description=description)


Text = Annotated[str, AfterValidator(_printable)]
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]
# A job longer than a week is a stale start time, not a measurement.
JOB_WALL_MAX_S = 7 * 24 * 3600.0
JobWall = Annotated[float, Field(ge=0, le=JOB_WALL_MAX_S, allow_inf_nan=False)]


class UploadForm(BaseModel):
    """The metadata a CI job sends next to its report files."""

    model_config = ConfigDict(json_schema_extra=_empty_is_unset)

    job: Text | None = _text("job", "CI job name (default: `default`)")
    commit: Text | None = _text("commit", "commit SHA")
    branch: Text | None = _text("branch", "branch name")
    pipeline: Text | None = _text("pipeline", "pipeline run id grouping the jobs of one CI run")
    machine: Text | None = _text("machine", "machine type or resource class")
    pull_request: Text | None = _text("pull_request", "pull/merge request number, if any")
    runner_os: Text | None = _text("runner_os", "the CI runner's operating system")
    plan_id: Text | None = _text("plan_id", "the shard plan this job ran (from the shards API)")
    label: list[Annotated[str, AfterValidator(_label)]] = Field(
        default_factory=list, max_length=100, description="run label `key=value`, repeatable"
    )
    started_at: Annotated[
        datetime | None, BeforeValidator(_iso_date_time), AfterValidator(_in_range)
    ] = Field(default=None, description="job start, ISO 8601 (UTC when no offset is given)")
    wall_s: Seconds | None = Field(default=None, description="job wall time, setup included")
    peak_rss_mib: Seconds | None = Field(default=None, description="job peak memory in MiB")
    job_wall_s: JobWall | None = Field(
        default=None,
        description="the CI job's wall seconds from its start up to this upload (setup "
        "included), as the client measured it (LAPTIME_JOB_STARTED_AT or the CI's job start)",
    )
    idempotency_key: Text | None = _text(
        "idempotency_key", "the same key twice is one upload (default: from the content)"
    )
    backfill: Annotated[bool, BeforeValidator(_form_bool)] = Field(
        default=False,
        description="keep the report's own timestamp however old (importing history); "
        "otherwise one older than 7 days or in the future dates the run when received",
    )
    first_parent: list[Annotated[str, Field(pattern=r"^[0-9a-fA-F]{7,64}$")]] = Field(
        default_factory=list,
        max_length=MAX_FIRST_PARENTS,
        description="the checkout's HEAD and its first parents, newest first, repeatable "
        "(`git rev-list --first-parent -n 50 HEAD`): the commits between two runs",
    )
    merged_request: list[Annotated[str, Field(pattern=r"^[0-9a-fA-F]{7,64}:[0-9]{1,10}$")]] = Field(
        default_factory=list,
        max_length=MAX_FIRST_PARENTS,
        description="`sha:number` of a first-parent commit whose message names the pull or "
        "merge request it came in (`Merge pull request #412`, `Title (#412)`, `See merge "
        "request g/p!412`), repeatable: the requests a change names",
    )
    runner: Annotated[str | None, AfterValidator(_runner)] = Field(
        default=None,
        max_length=40,
        description="test runner; empty or `auto`: detected per report",
        # The values _runner takes, in the schema too: any other string is a 422.
        json_schema_extra={"enum": ["", "auto", *RUNNERS]},
    )

    def run_metadata(self) -> UploadMetadata:
        """The run the upload describes, as stored on the upload row (the worker reads it)."""
        return UploadMetadata(
            commit=self.commit,
            branch=self.branch,
            pipeline=self.pipeline,
            job=self.job or "default",
            machine=self.machine,
            pull_request=self.pull_request,
            runner_os=self.runner_os,
            plan_id=self.plan_id,
            labels=parse_labels(self.label),
            started_at=self.started_at,
            wall_s=self.wall_s,
            peak_rss_mib=self.peak_rss_mib,
            job_wall_s=self.job_wall_s,
            backfill=self.backfill,
            runner=self.runner,
            first_parents=tuple(sha.lower() for sha in self.first_parent),
            merged_requests=tuple(entry.lower() for entry in self.merged_request),
        )
