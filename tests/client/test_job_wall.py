"""The CI job's wall: the client knows it when the job's start is known, from an early
CI step's LAPTIME_JOB_STARTED_AT (epoch seconds or ISO 8601) or GitLab's CI_JOB_STARTED_AT,
and sends it as the upload's `job_wall_s`."""

from __future__ import annotations

import pytest

from laptime_ci.ci_env import JOB_WALL_MAX_S, job_wall_s, parse_job_start
from laptime_ci.upload import UploadMetadata, metadata_from_env

NOW = 1_764_770_000.0  # 2025-12-03T13:53:20Z


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1764769880", NOW - 120),
        (" 1764769880.5 ", NOW - 119.5),
        ("2025-12-03T13:51:20Z", NOW - 120),
        ("2025-12-03T14:51:20+01:00", NOW - 120),
        ("2025-12-03T13:51:20", NOW - 120),  # no offset: UTC
        ("", None),
        ("soon", None),
        ("nan", None),
        ("inf", None),
    ],
)
def test_job_start_forms(value: str, expected: float | None) -> None:
    assert parse_job_start(value) == expected


def test_job_wall_from_the_variable_or_gitlabs_own() -> None:
    assert job_wall_s({"LAPTIME_JOB_STARTED_AT": str(NOW - 95.25)}, now=NOW) == 95.25
    gitlab = {"GITLAB_CI": "true", "CI_JOB_STARTED_AT": "2025-12-03T13:50:00Z"}
    assert job_wall_s(gitlab, now=NOW) == 200.0
    # The explicit variable wins over the service's.
    assert job_wall_s({**gitlab, "LAPTIME_JOB_STARTED_AT": str(NOW - 10)}, now=NOW) == 10.0
    # Outside GitLab the same name means nothing.
    assert job_wall_s({"CI_JOB_STARTED_AT": "2025-12-03T13:50:00Z"}, now=NOW) is None
    assert job_wall_s({}, now=NOW) is None


def test_a_start_in_the_future_or_over_a_week_ago_is_unknown() -> None:
    assert job_wall_s({"LAPTIME_JOB_STARTED_AT": str(NOW + 5)}, now=NOW) is None
    stale = str(NOW - JOB_WALL_MAX_S - 1)
    assert job_wall_s({"LAPTIME_JOB_STARTED_AT": stale}, now=NOW) is None


def test_the_upload_sends_it() -> None:
    metadata = metadata_from_env({"LAPTIME_JOB_STARTED_AT": "0"})
    assert metadata.job_wall_s is None  # 1970: over a week ago
    assert ("job_wall_s", "123.5") in UploadMetadata(job_wall_s=123.5).form_fields()
    assert all(name != "job_wall_s" for name, _ in UploadMetadata().form_fields())
