"""CI metadata from each service's documented variables (names as its documentation lists them)."""

from __future__ import annotations

import pytest

from laptime_ci.ci_env import PROVIDERS, CiInfo, detect_ci
from laptime_ci.upload import detect_ci_metadata, metadata_from_env

# service -> (environment a job of it sees, what must be read from it)
CASES: dict[str, tuple[dict[str, str], CiInfo]] = {
    "github-actions": (
        {
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_SHA": "a1",
            "GITHUB_REF": "refs/pull/42/merge",
            "GITHUB_REF_NAME": "42/merge",
            "GITHUB_HEAD_REF": "feature/x",
            "GITHUB_RUN_ID": "1001",
            "GITHUB_RUN_ATTEMPT": "2",
            "GITHUB_JOB": "tests",
            "RUNNER_OS": "Linux",
        },
        CiInfo("github-actions", "a1", "feature/x", "1001", "tests", "2", "42", "Linux"),
    ),
    "gitlab": (
        {
            "CI": "true",
            "GITLAB_CI": "true",
            "CI_COMMIT_SHA": "b2",
            "CI_COMMIT_REF_NAME": "main",
            "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME": "mr-branch",
            "CI_MERGE_REQUEST_IID": "7",
            "CI_PIPELINE_ID": "555",
            "CI_JOB_NAME": "pytest 1/3",
            "CI_RUNNER_EXECUTABLE_ARCH": "linux/amd64",
        },
        CiInfo("gitlab", "b2", "mr-branch", "555", "pytest 1/3", None, "7", "linux"),
    ),
    "circleci": (
        {
            "CI": "true",
            "CIRCLECI": "true",
            "CIRCLE_SHA1": "c3",
            "CIRCLE_BRANCH": "dev",
            "CIRCLE_WORKFLOW_ID": "wf-uuid",
            "CIRCLE_JOB": "test",
            "CIRCLE_PULL_REQUEST": "https://github.com/o/r/pull/88",
        },
        CiInfo("circleci", "c3", "dev", "wf-uuid", "test", None, "88", None),
    ),
    "buildkite": (
        {
            "CI": "true",
            "BUILDKITE": "true",
            "BUILDKITE_COMMIT": "d4",
            "BUILDKITE_BRANCH": "main",
            "BUILDKITE_BUILD_ID": "bk-uuid",
            "BUILDKITE_LABEL": ":pytest: unit",
            "BUILDKITE_STEP_KEY": "unit",
            "BUILDKITE_RETRY_COUNT": "1",
            "BUILDKITE_PULL_REQUEST": "false",
        },
        CiInfo("buildkite", "d4", "main", "bk-uuid", ":pytest: unit", "2", None, None),
    ),
    "jenkins": (
        {
            "JENKINS_URL": "https://ci.example/",
            "GIT_COMMIT": "e5",
            "BRANCH_NAME": "PR-9",
            "CHANGE_BRANCH": "topic",
            "CHANGE_ID": "9",
            "BUILD_TAG": "jenkins-proj-PR-9-12",
            "BUILD_NUMBER": "12",
            "JOB_NAME": "proj/PR-9",
        },
        CiInfo("jenkins", "e5", "topic", "jenkins-proj-PR-9-12", "proj/PR-9", None, "9", None),
    ),
    "azure-pipelines": (
        {
            "TF_BUILD": "True",
            "BUILD_SOURCEVERSION": "f6",
            "BUILD_SOURCEBRANCH": "refs/heads/main",
            "BUILD_BUILDID": "321",
            "SYSTEM_JOBDISPLAYNAME": "Tests Linux",
            "SYSTEM_JOBATTEMPT": "3",
            "SYSTEM_PULLREQUEST_PULLREQUESTNUMBER": "15",
            "AGENT_OS": "Windows_NT",
        },
        CiInfo("azure-pipelines", "f6", "main", "321", "Tests Linux", "3", "15", "Windows_NT"),
    ),
    "bitbucket": (
        {
            "CI": "true",
            "BITBUCKET_BUILD_NUMBER": "77",
            "BITBUCKET_COMMIT": "g7",
            "BITBUCKET_BRANCH": "feat",
            "BITBUCKET_PIPELINE_UUID": "{pipe-uuid}",
            "BITBUCKET_STEP_UUID": "{step-uuid}",
            "BITBUCKET_PR_ID": "4",
        },
        CiInfo("bitbucket", "g7", "feat", "{pipe-uuid}", "{step-uuid}", None, "4", None),
    ),
    "drone": (
        {
            "CI": "true",
            "DRONE": "true",
            "DRONE_COMMIT_SHA": "h8",
            "DRONE_BRANCH": "main",
            "DRONE_SOURCE_BRANCH": "src",
            "DRONE_BUILD_NUMBER": "19",
            "DRONE_STAGE_NAME": "test",
            "DRONE_PULL_REQUEST": "21",
            "DRONE_STAGE_OS": "linux",
        },
        CiInfo("drone", "h8", "src", "19", "test", None, "21", "linux"),
    ),
    "woodpecker": (
        {
            "CI": "woodpecker",
            "CI_COMMIT_SHA": "i9",
            "CI_COMMIT_BRANCH": "main",
            "CI_COMMIT_SOURCE_BRANCH": "pr-src",
            "CI_PIPELINE_NUMBER": "8",
            "CI_WORKFLOW_NAME": "tests",
            "CI_STEP_NAME": "pytest",
            "CI_COMMIT_PULL_REQUEST": "13",
            "CI_SYSTEM_PLATFORM": "linux/arm64",
        },
        CiInfo("woodpecker", "i9", "pr-src", "8", "tests", None, "13", "linux"),
    ),
    "teamcity": (
        {
            "TEAMCITY_VERSION": "2025.03",
            "BUILD_VCS_NUMBER": "j10",
            "BUILD_NUMBER": "400",
            "TEAMCITY_BUILDCONF_NAME": "Unit tests",
            "TEAMCITY_PROJECT_NAME": "proj",
        },
        CiInfo("teamcity", "j10", None, "400", "Unit tests", None, None, None),
    ),
    "travis": (
        {
            "CI": "true",
            "TRAVIS": "true",
            "TRAVIS_COMMIT": "k11",
            "TRAVIS_BRANCH": "main",
            "TRAVIS_PULL_REQUEST_BRANCH": "topic",
            "TRAVIS_PULL_REQUEST": "31",
            "TRAVIS_BUILD_ID": "5000",
            "TRAVIS_JOB_NAME": "py39",
            "TRAVIS_JOB_NUMBER": "5000.1",
            "TRAVIS_OS_NAME": "osx",
        },
        CiInfo("travis", "k11", "topic", "5000", "py39", None, "31", "osx"),
    ),
    "semaphore": (
        {
            "CI": "true",
            "SEMAPHORE": "true",
            "SEMAPHORE_GIT_SHA": "l12",
            "SEMAPHORE_GIT_BRANCH": "main",
            "SEMAPHORE_GIT_PR_BRANCH": "pr",
            "SEMAPHORE_GIT_PR_NUMBER": "6",
            "SEMAPHORE_WORKFLOW_ID": "wf",
            "SEMAPHORE_PIPELINE_ID": "pl",
            "SEMAPHORE_JOB_NAME": "Unit",
            "SEMAPHORE_AGENT_MACHINE_OS_IMAGE": "ubuntu2204",
        },
        CiInfo("semaphore", "l12", "pr", "wf", "Unit", None, "6", "ubuntu2204"),
    ),
}


@pytest.mark.parametrize("service", sorted(CASES))
def test_each_service_is_read_from_its_documented_variables(service: str) -> None:
    env, expected = CASES[service]
    assert detect_ci(env) == expected


def test_every_provider_has_a_case() -> None:
    assert {provider.name for provider in PROVIDERS} == set(CASES)


def test_placeholders_are_unknown_not_values() -> None:
    # Travis and Buildkite write "false" where there is no pull request.
    env = {"TRAVIS": "true", "TRAVIS_PULL_REQUEST": "false", "TRAVIS_BRANCH": "main"}
    assert detect_ci(env) == CiInfo("travis", branch="main")
    assert detect_ci({"HOME": "/root", "CI": "true"}) == CiInfo()


def test_upload_metadata_joins_the_attempt_to_the_pipeline() -> None:
    env, info = CASES["azure-pipelines"]
    expected = {
        "commit": "f6",
        "branch": "main",
        "pipeline": "321-3",
        "job": "Tests Linux",
        "pull_request": info.pr,
        "runner_os": info.os,
    }
    assert detect_ci_metadata(env) == {k: v for k, v in expected.items() if v}


@pytest.mark.parametrize("service", sorted(CASES))
def test_laptime_pipeline_names_the_uploaded_run_as_it_names_the_queue(service: str) -> None:
    env, _ = CASES[service]
    named = {**env, "LAPTIME_PIPELINE": "nightly 7"}
    assert metadata_from_env(named).pipeline == "nightly 7"
    assert metadata_from_env(env).pipeline == detect_ci_metadata(env).get("pipeline")


@pytest.mark.parametrize("service", sorted(CASES))
def test_pull_request_and_runner_os_are_sent_with_the_upload(service: str) -> None:
    env, info = CASES[service]
    fields = dict(metadata_from_env(env).form_fields())
    assert fields.get("pull_request") == info.pr
    assert fields.get("runner_os") == info.os
