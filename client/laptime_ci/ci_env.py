"""CI metadata from the environment of eleven CI services, one table row each.

Every variable name below is the one the service's documentation lists (links in
docs/plugin.md); a value the environment does not set is simply unknown (None).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable

Env = Mapping[str, str]


@dataclass(frozen=True)
class CiInfo:
    """What a CI job says about itself; every field may be unknown."""

    provider: str | None = None
    commit: str | None = None
    branch: str | None = None
    pipeline: str | None = None
    job: str | None = None
    run_attempt: str | None = None
    pr: str | None = None
    os: str | None = None
    job_started_at: str | None = None  # the job's start as the service tells it (ISO 8601)


def first(env: Env, *names: str) -> str | None:
    """The first of `names` set to a non-empty value."""
    for name in names:
        value = env.get(name)
        if value:
            return value
    return None


def _number(value: str | None) -> str | None:
    """A PR number from a number, a "false" placeholder, a ref or a URL (its last digits)."""
    if not value or value.lower() == "false":
        return None
    found = re.findall(r"\d+", value)
    return found[-1] if found else None


def _os_of_platform(value: str | None) -> str | None:
    """ "linux/amd64" -> "linux"."""
    return value.split("/", 1)[0] if value else None


def _github_pr(ref: str | None) -> str | None:
    """The PR number of a "refs/pull/123/merge" ref; branch and tag refs have none."""
    return _number(ref) if ref and ref.startswith("refs/pull/") else None


def _attempt_of_retries(retries: str | None) -> str | None:
    """Buildkite's retry count is 0 on the first run; the attempt number is one more."""
    return str(int(retries) + 1) if retries and retries.isdigit() else None


def _branch_of_ref(ref: str | None) -> str | None:
    """ "refs/heads/main" -> "main" (Azure gives full refs)."""
    return ref.removeprefix("refs/heads/") if ref else None


@dataclass(frozen=True)
class Provider:
    """One CI service: how to recognise it and which variables hold each CiInfo field.

    `fields` maps a CiInfo field to the variable names to try in order (the first set wins);
    `convert` optionally turns that raw value into the field's value.
    """

    name: str
    detect: Callable[[Env], bool]
    fields: Mapping[str, tuple[str, ...]]
    convert: Mapping[str, Callable[[str | None], str | None]] = field(default_factory=dict)

    def read(self, env: Env) -> CiInfo:
        """The CiInfo this service's variables describe, the provider name included."""
        values: dict[str, str | None] = {}
        for name, variables in self.fields.items():
            raw = first(env, *variables)
            values[name] = self.convert[name](raw) if name in self.convert else raw
        return CiInfo(self.name, **{k: v or None for k, v in values.items()})


# The first matching row wins. Woodpecker comes before GitLab because both use CI_* names;
# detection is by each service's own marker variable.
PROVIDERS: tuple[Provider, ...] = (
    Provider(
        "github-actions",
        lambda e: e.get("GITHUB_ACTIONS") == "true",
        {
            "commit": ("GITHUB_SHA",),
            # GITHUB_REF_NAME is "123/merge" on pull requests; the head ref is the branch.
            "branch": ("GITHUB_HEAD_REF", "GITHUB_REF_NAME"),
            "pipeline": ("GITHUB_RUN_ID",),
            "job": ("GITHUB_JOB",),
            "run_attempt": ("GITHUB_RUN_ATTEMPT",),
            "pr": ("GITHUB_REF",),
            "os": ("RUNNER_OS",),
        },
        {"pr": _github_pr},
    ),
    Provider(
        "woodpecker",
        lambda e: e.get("CI") == "woodpecker",
        {
            "commit": ("CI_COMMIT_SHA",),
            "branch": ("CI_COMMIT_SOURCE_BRANCH", "CI_COMMIT_BRANCH"),
            "pipeline": ("CI_PIPELINE_NUMBER",),
            "job": ("CI_WORKFLOW_NAME", "CI_STEP_NAME"),
            "pr": ("CI_COMMIT_PULL_REQUEST",),
            "os": ("CI_SYSTEM_PLATFORM",),
        },
        {"os": _os_of_platform},
    ),
    Provider(
        "gitlab",
        lambda e: e.get("GITLAB_CI") == "true",
        {
            "commit": ("CI_COMMIT_SHA",),
            "branch": ("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_REF_NAME"),
            "pipeline": ("CI_PIPELINE_ID",),
            "job": ("CI_JOB_NAME",),
            "pr": ("CI_MERGE_REQUEST_IID",),
            "os": ("CI_RUNNER_EXECUTABLE_ARCH",),
            "job_started_at": ("CI_JOB_STARTED_AT",),
        },
        {"os": _os_of_platform},
    ),
    Provider(
        "circleci",
        lambda e: e.get("CIRCLECI") == "true",
        {
            "commit": ("CIRCLE_SHA1",),
            "branch": ("CIRCLE_BRANCH",),
            "pipeline": ("CIRCLE_WORKFLOW_ID",),
            "job": ("CIRCLE_JOB",),
            "pr": ("CIRCLE_PR_NUMBER", "CIRCLE_PULL_REQUEST"),
        },
        {"pr": _number},
    ),
    Provider(
        "buildkite",
        lambda e: e.get("BUILDKITE") == "true",
        {
            "commit": ("BUILDKITE_COMMIT",),
            "branch": ("BUILDKITE_BRANCH",),
            "pipeline": ("BUILDKITE_BUILD_ID",),
            "job": ("BUILDKITE_LABEL", "BUILDKITE_STEP_KEY"),
            "run_attempt": ("BUILDKITE_RETRY_COUNT",),
            "pr": ("BUILDKITE_PULL_REQUEST",),
            "os": ("BUILDKITE_AGENT_META_DATA_OS",),
        },
        {"run_attempt": _attempt_of_retries, "pr": _number},
    ),
    Provider(
        "azure-pipelines",
        lambda e: e.get("TF_BUILD", "").lower() == "true",
        {
            "commit": ("BUILD_SOURCEVERSION",),
            "branch": ("SYSTEM_PULLREQUEST_SOURCEBRANCH", "BUILD_SOURCEBRANCH"),
            "pipeline": ("BUILD_BUILDID",),
            "job": ("SYSTEM_JOBDISPLAYNAME", "SYSTEM_JOBNAME"),
            "run_attempt": ("SYSTEM_JOBATTEMPT",),
            "pr": ("SYSTEM_PULLREQUEST_PULLREQUESTNUMBER", "SYSTEM_PULLREQUEST_PULLREQUESTID"),
            "os": ("AGENT_OS",),
        },
        {"branch": _branch_of_ref},
    ),
    Provider(
        "bitbucket",
        lambda e: bool(e.get("BITBUCKET_BUILD_NUMBER")),
        {
            "commit": ("BITBUCKET_COMMIT",),
            "branch": ("BITBUCKET_BRANCH",),
            "pipeline": ("BITBUCKET_PIPELINE_UUID", "BITBUCKET_BUILD_NUMBER"),
            "job": ("BITBUCKET_STEP_UUID",),
            "pr": ("BITBUCKET_PR_ID",),
        },
    ),
    Provider(
        "drone",
        lambda e: e.get("DRONE") == "true",
        {
            "commit": ("DRONE_COMMIT_SHA", "DRONE_COMMIT"),
            "branch": ("DRONE_SOURCE_BRANCH", "DRONE_BRANCH"),
            "pipeline": ("DRONE_BUILD_NUMBER",),
            "job": ("DRONE_STAGE_NAME", "DRONE_STEP_NAME"),
            "pr": ("DRONE_PULL_REQUEST",),
            "os": ("DRONE_STAGE_OS",),
        },
    ),
    Provider(
        "teamcity",
        lambda e: bool(e.get("TEAMCITY_VERSION")),
        # TeamCity passes no branch to the environment unless the build maps one (env.BRANCH_NAME).
        {
            "commit": ("BUILD_VCS_NUMBER",),
            "branch": ("BRANCH_NAME",),
            "pipeline": ("BUILD_NUMBER",),
            "job": ("TEAMCITY_BUILDCONF_NAME",),
        },
    ),
    Provider(
        "travis",
        lambda e: e.get("TRAVIS") == "true",
        {
            "commit": ("TRAVIS_COMMIT",),
            "branch": ("TRAVIS_PULL_REQUEST_BRANCH", "TRAVIS_BRANCH"),
            "pipeline": ("TRAVIS_BUILD_ID",),
            "job": ("TRAVIS_JOB_NAME", "TRAVIS_JOB_NUMBER"),
            "pr": ("TRAVIS_PULL_REQUEST",),
            "os": ("TRAVIS_OS_NAME",),
        },
        {"pr": _number},
    ),
    Provider(
        "semaphore",
        lambda e: e.get("SEMAPHORE") == "true",
        {
            "commit": ("SEMAPHORE_GIT_SHA",),
            "branch": ("SEMAPHORE_GIT_PR_BRANCH", "SEMAPHORE_GIT_BRANCH"),
            "pipeline": ("SEMAPHORE_WORKFLOW_ID", "SEMAPHORE_PIPELINE_ID"),
            "job": ("SEMAPHORE_JOB_NAME",),
            "pr": ("SEMAPHORE_GIT_PR_NUMBER",),
            "os": ("SEMAPHORE_AGENT_MACHINE_OS_IMAGE",),
        },
    ),
    Provider(
        "jenkins",
        lambda e: bool(e.get("JENKINS_URL")),
        {
            "commit": ("GIT_COMMIT",),
            "branch": ("CHANGE_BRANCH", "BRANCH_NAME", "GIT_BRANCH"),
            "pipeline": ("BUILD_TAG", "BUILD_NUMBER"),
            "job": ("STAGE_NAME", "JOB_NAME"),
            "pr": ("CHANGE_ID",),
        },
    ),
)


def detect_ci(env: Env) -> CiInfo:
    """The CI service running this process and what it tells; CiInfo() outside CI."""
    for provider in PROVIDERS:
        if provider.detect(env):
            return provider.read(env)
    return CiInfo()


# A job wall beyond a week is a stale or wrong start, not a measurement (the server agrees).
JOB_WALL_MAX_S = 7 * 24 * 3600.0
JOB_STARTED_VAR = "LAPTIME_JOB_STARTED_AT"


def parse_job_start(value: str | None) -> float | None:
    """Epoch seconds of a job start given as epoch seconds ("1764770000.5") or ISO 8601
    (UTC when no offset is given); None when absent or unreadable."""
    if not value or not value.strip():
        return None
    text = value.strip()
    try:
        epoch = float(text)
    except ValueError:
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=timezone.utc)
        return parsed.timestamp()
    return epoch if math.isfinite(epoch) else None


def job_wall_s(env: Env, now: float | None = None) -> float | None:
    """The CI job's wall seconds so far, when its start is known: `LAPTIME_JOB_STARTED_AT`
    (set by an early CI step), else the service's own variable (GitLab's CI_JOB_STARTED_AT).
    None when unknown, in the future or over a week old."""
    started = parse_job_start(env.get(JOB_STARTED_VAR))
    if started is None:
        started = parse_job_start(detect_ci(env).job_started_at)
    if started is None:
        return None
    wall = (time.time() if now is None else now) - started
    return round(wall, 3) if 0 <= wall <= JOB_WALL_MAX_S else None
