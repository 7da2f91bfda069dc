"""CI metadata from the environment of eleven CI services, one table row each.

Every variable name below is the one the service's documentation lists (links in
docs/plugin.md); a value the environment does not set is simply unknown (None).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
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


def _github(env: Env) -> CiInfo:
    ref = env.get("GITHUB_REF", "")
    return CiInfo(
        commit=env.get("GITHUB_SHA"),
        # GITHUB_REF_NAME is "123/merge" on pull requests; the head ref is the branch.
        branch=first(env, "GITHUB_HEAD_REF", "GITHUB_REF_NAME"),
        pipeline=env.get("GITHUB_RUN_ID"),
        job=env.get("GITHUB_JOB"),
        run_attempt=env.get("GITHUB_RUN_ATTEMPT"),
        pr=_number(ref) if ref.startswith("refs/pull/") else None,
        os=env.get("RUNNER_OS"),
    )


def _gitlab(env: Env) -> CiInfo:
    return CiInfo(
        commit=env.get("CI_COMMIT_SHA"),
        branch=first(env, "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_REF_NAME"),
        pipeline=env.get("CI_PIPELINE_ID"),
        job=env.get("CI_JOB_NAME"),
        pr=env.get("CI_MERGE_REQUEST_IID"),
        os=_os_of_platform(env.get("CI_RUNNER_EXECUTABLE_ARCH")),
    )


def _circleci(env: Env) -> CiInfo:
    return CiInfo(
        commit=env.get("CIRCLE_SHA1"),
        branch=env.get("CIRCLE_BRANCH"),
        pipeline=env.get("CIRCLE_WORKFLOW_ID"),
        job=env.get("CIRCLE_JOB"),
        pr=_number(first(env, "CIRCLE_PR_NUMBER", "CIRCLE_PULL_REQUEST")),
    )


def _buildkite(env: Env) -> CiInfo:
    retries = env.get("BUILDKITE_RETRY_COUNT")
    return CiInfo(
        commit=env.get("BUILDKITE_COMMIT"),
        branch=env.get("BUILDKITE_BRANCH"),
        pipeline=env.get("BUILDKITE_BUILD_ID"),
        job=first(env, "BUILDKITE_LABEL", "BUILDKITE_STEP_KEY"),
        # The retry count is 0 on the first run.
        run_attempt=str(int(retries) + 1) if retries and retries.isdigit() else None,
        pr=_number(env.get("BUILDKITE_PULL_REQUEST")),
        os=env.get("BUILDKITE_AGENT_META_DATA_OS"),
    )


def _jenkins(env: Env) -> CiInfo:
    return CiInfo(
        commit=env.get("GIT_COMMIT"),
        branch=first(env, "CHANGE_BRANCH", "BRANCH_NAME", "GIT_BRANCH"),
        pipeline=first(env, "BUILD_TAG", "BUILD_NUMBER"),
        job=first(env, "STAGE_NAME", "JOB_NAME"),
        pr=env.get("CHANGE_ID"),
    )


def _azure(env: Env) -> CiInfo:
    source = first(env, "SYSTEM_PULLREQUEST_SOURCEBRANCH", "BUILD_SOURCEBRANCH")
    return CiInfo(
        commit=env.get("BUILD_SOURCEVERSION"),
        branch=source.removeprefix("refs/heads/") if source else None,
        pipeline=env.get("BUILD_BUILDID"),
        job=first(env, "SYSTEM_JOBDISPLAYNAME", "SYSTEM_JOBNAME"),
        run_attempt=env.get("SYSTEM_JOBATTEMPT"),
        pr=first(env, "SYSTEM_PULLREQUEST_PULLREQUESTNUMBER", "SYSTEM_PULLREQUEST_PULLREQUESTID"),
        os=env.get("AGENT_OS"),
    )


def _bitbucket(env: Env) -> CiInfo:
    return CiInfo(
        commit=env.get("BITBUCKET_COMMIT"),
        branch=env.get("BITBUCKET_BRANCH"),
        pipeline=first(env, "BITBUCKET_PIPELINE_UUID", "BITBUCKET_BUILD_NUMBER"),
        job=env.get("BITBUCKET_STEP_UUID"),
        pr=env.get("BITBUCKET_PR_ID"),
    )


def _drone(env: Env) -> CiInfo:
    return CiInfo(
        commit=first(env, "DRONE_COMMIT_SHA", "DRONE_COMMIT"),
        branch=first(env, "DRONE_SOURCE_BRANCH", "DRONE_BRANCH"),
        pipeline=env.get("DRONE_BUILD_NUMBER"),
        job=first(env, "DRONE_STAGE_NAME", "DRONE_STEP_NAME"),
        pr=env.get("DRONE_PULL_REQUEST"),
        os=env.get("DRONE_STAGE_OS"),
    )


def _woodpecker(env: Env) -> CiInfo:
    return CiInfo(
        commit=env.get("CI_COMMIT_SHA"),
        branch=first(env, "CI_COMMIT_SOURCE_BRANCH", "CI_COMMIT_BRANCH"),
        pipeline=env.get("CI_PIPELINE_NUMBER"),
        job=first(env, "CI_WORKFLOW_NAME", "CI_STEP_NAME"),
        pr=env.get("CI_COMMIT_PULL_REQUEST"),
        os=_os_of_platform(env.get("CI_SYSTEM_PLATFORM")),
    )


def _teamcity(env: Env) -> CiInfo:
    # TeamCity passes no branch to the environment unless the build maps one (env.BRANCH_NAME).
    return CiInfo(
        commit=env.get("BUILD_VCS_NUMBER"),
        branch=env.get("BRANCH_NAME"),
        pipeline=env.get("BUILD_NUMBER"),
        job=env.get("TEAMCITY_BUILDCONF_NAME"),
    )


def _travis(env: Env) -> CiInfo:
    return CiInfo(
        commit=env.get("TRAVIS_COMMIT"),
        branch=first(env, "TRAVIS_PULL_REQUEST_BRANCH", "TRAVIS_BRANCH"),
        pipeline=env.get("TRAVIS_BUILD_ID"),
        job=first(env, "TRAVIS_JOB_NAME", "TRAVIS_JOB_NUMBER"),
        pr=_number(env.get("TRAVIS_PULL_REQUEST")),
        os=env.get("TRAVIS_OS_NAME"),
    )


def _semaphore(env: Env) -> CiInfo:
    return CiInfo(
        commit=env.get("SEMAPHORE_GIT_SHA"),
        branch=first(env, "SEMAPHORE_GIT_PR_BRANCH", "SEMAPHORE_GIT_BRANCH"),
        pipeline=first(env, "SEMAPHORE_WORKFLOW_ID", "SEMAPHORE_PIPELINE_ID"),
        job=env.get("SEMAPHORE_JOB_NAME"),
        pr=env.get("SEMAPHORE_GIT_PR_NUMBER"),
        os=env.get("SEMAPHORE_AGENT_MACHINE_OS_IMAGE"),
    )


# (name, detection, reader): the first matching row wins. Woodpecker comes before GitLab
# because both use CI_* names; detection is by each service's own marker variable.
PROVIDERS: tuple[tuple[str, Callable[[Env], bool], Callable[[Env], CiInfo]], ...] = (
    ("github-actions", lambda e: e.get("GITHUB_ACTIONS") == "true", _github),
    ("woodpecker", lambda e: e.get("CI") == "woodpecker", _woodpecker),
    ("gitlab", lambda e: e.get("GITLAB_CI") == "true", _gitlab),
    ("circleci", lambda e: e.get("CIRCLECI") == "true", _circleci),
    ("buildkite", lambda e: e.get("BUILDKITE") == "true", _buildkite),
    ("azure-pipelines", lambda e: e.get("TF_BUILD", "").lower() == "true", _azure),
    ("bitbucket", lambda e: bool(e.get("BITBUCKET_BUILD_NUMBER")), _bitbucket),
    ("drone", lambda e: e.get("DRONE") == "true", _drone),
    ("teamcity", lambda e: bool(e.get("TEAMCITY_VERSION")), _teamcity),
    ("travis", lambda e: e.get("TRAVIS") == "true", _travis),
    ("semaphore", lambda e: e.get("SEMAPHORE") == "true", _semaphore),
    ("jenkins", lambda e: bool(e.get("JENKINS_URL")), _jenkins),
)


def detect_ci(env: Env) -> CiInfo:
    """The CI service running this process and what it tells; CiInfo() outside CI."""
    for name, detect, read in PROVIDERS:
        if detect(env):
            info = read(env)
            return CiInfo(name, *(getattr(info, f) or None for f in _FIELDS))
    return CiInfo()


_FIELDS = ("commit", "branch", "pipeline", "job", "run_attempt", "pr", "os")
