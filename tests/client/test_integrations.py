"""The CI integration files in integrations/: each is parsed as its CI would read it and its
shell steps run, with the variables that CI sets, against a live server."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from sqlalchemy import Engine, text

from tests.client.conftest import FAILING, ROOT, write_user_project
from tests.conftest import LiveServer, ProjectFixture

INTEGRATIONS = ROOT / "integrations"
EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


@dataclass
class Step:
    """One shell step of a CI job."""

    script: str
    env: dict[str, str] = field(default_factory=dict)
    always: bool = False


def github_steps(action: dict[str, Any], inputs: dict[str, str]) -> list[Step]:
    """The composite action's steps with `${{ inputs.x }}` resolved (defaults included)."""
    values = {name: str(spec.get("default", "")) for name, spec in action["inputs"].items()}
    values.update(inputs)

    def resolve(value: str) -> str:
        resolved = EXPRESSION.sub(lambda m: values[m.group(1)], value)
        assert "${{" not in resolved, f"unresolved expression in {value!r}"
        return resolved

    steps = []
    for step in action["runs"]["steps"]:
        assert step["shell"] == "bash"
        steps.append(
            Step(
                resolve(step["run"]),
                {k: resolve(str(v)) for k, v in step.get("env", {}).items()},
                always=step.get("if") == "always()",
            )
        )
    return steps


def gitlab_steps(job: dict[str, Any]) -> list[Step]:
    """before_script and script in one shell, after_script in another that always runs."""
    env = {k: str(v) for k, v in job.get("variables", {}).items()}
    main = "\n".join(job["before_script"] + job["script"])
    return [Step(main, env), Step("\n".join(job["after_script"]), env, always=True)]


def circleci_steps(job: dict[str, Any]) -> list[Step]:
    """The `run` steps (checkout and caches are CircleCI's own)."""
    env = {k: str(v) for k, v in job.get("environment", {}).items()}
    steps = []
    for step in job["steps"]:
        if isinstance(step, dict) and "run" in step:
            run = step["run"]
            command = run if isinstance(run, str) else run["command"]
            always = isinstance(run, dict) and run.get("when") == "always"
            steps.append(Step(command, env, always=always))
    return steps


@dataclass
class JobResult:
    exit_code: int
    output: str


def run_job(steps: list[Step], *, cwd: Path, env: dict[str, str]) -> JobResult:
    """Run the steps as the CI would: stop at the first failure except `always` steps; the
    job's exit code is its first failing step's."""
    exit_code = 0
    output = []
    for step in steps:
        if exit_code and not step.always:
            continue
        done = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", step.script],
            cwd=cwd,
            env={**env, **step.env},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        output.append(done.stdout + done.stderr)
        if done.returncode and not exit_code:
            exit_code = done.returncode
    return JobResult(exit_code, "\n".join(output))


@pytest.fixture
def ci_env(ci_venv: Path, wheel: Path, live_server: LiveServer, project: ProjectFixture):
    """What a CI job's environment holds: the venv on PATH, laptime's settings as secrets."""
    return {
        "PATH": f"{ci_venv.parent}:/usr/bin:/bin",
        "HOME": "/tmp",
        "LAPTIME_URL": live_server.url,
        "LAPTIME_TOKEN": project.upload_token,
        "LAPTIME_READ_TOKEN": project.read_token,
        "LAPTIME_PROJECT": project.slug,
        "LAPTIME_CI_SPEC": str(wheel),
    }


def run_shards(make_steps, total: int, tmp_path: Path, env: dict[str, str]) -> list[str]:
    """Run the job once per shard in a fresh checkout of the user project; returns the
    nodeids that ran over all shards and checks each job's exit code is the tests' own."""
    ran: list[str] = []
    for index in range(1, total + 1):
        checkout = tmp_path / f"shard{index}"
        write_user_project(checkout)
        log = checkout / "ran.log"
        result = run_job(make_steps(index), cwd=checkout, env={**env, "RAN_LOG": str(log)})
        here = log.read_text().splitlines() if log.exists() else []
        assert result.exit_code == (1 if FAILING in here else 0), result.output
        assert f"shard {index}/{total}" in result.output, result.output
        assert re.search(r"upload \d+: queued", result.output), result.output
        ran += here
    return ran


def shard_labels(engine: Engine, project_id: int, count: int) -> list[str]:
    """The shard labels of the project's runs, once `count` runs are stored."""
    deadline = time.monotonic() + 60
    while True:
        with engine.connect() as conn:
            rows = conn.execute(
                text("SELECT labels->>'shard' FROM run WHERE project_id = :p"), {"p": project_id}
            ).scalars()
            labels = sorted(str(r) for r in rows)
        if len(labels) >= count or time.monotonic() > deadline:
            return labels
        time.sleep(0.2)


def test_github_action_matrix_runs_each_test_once_and_uploads_always(
    tmp_path: Path, ci_env: dict[str, str], engine: Engine, project: ProjectFixture
) -> None:
    action = yaml.safe_load((INTEGRATIONS / "github" / "action.yml").read_text())
    assert action["runs"]["using"] == "composite"
    env = {k: v for k, v in ci_env.items() if not k.startswith("LAPTIME_")}
    env |= {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "77", "GITHUB_JOB": "tests"}

    def steps(index: int) -> list[Step]:
        return github_steps(
            action,
            {
                "url": ci_env["LAPTIME_URL"],
                "token": ci_env["LAPTIME_TOKEN"],
                "read-token": ci_env["LAPTIME_READ_TOKEN"],
                "project": ci_env["LAPTIME_PROJECT"],
                "shard": f"{index}/3",
                "client": ci_env["LAPTIME_CI_SPEC"],
            },
        )

    ran = run_shards(steps, 3, tmp_path, env)
    assert len(ran) == len(set(ran)) == 10
    assert shard_labels(engine, project.id, 3) == ["1/3", "2/3", "3/3"]


def test_gitlab_template_parallel_jobs(tmp_path: Path, ci_env: dict[str, str]) -> None:
    template = yaml.safe_load((INTEGRATIONS / "gitlab" / "laptime.gitlab-ci.yml").read_text())
    job = template[".laptime-pytest"]
    assert ".laptime/" in job["cache"]["paths"]
    env = {**ci_env, "GITLAB_CI": "true", "CI_PIPELINE_ID": "5", "CI_JOB_NAME": "tests"}
    # The template's default wins over the job's variables only where the job sets none.
    job["variables"]["LAPTIME_CI_SPEC"] = ci_env["LAPTIME_CI_SPEC"]

    def steps(index: int) -> list[Step]:
        env["CI_NODE_INDEX"], env["CI_NODE_TOTAL"] = str(index), "2"
        return gitlab_steps(job)

    ran = run_shards(steps, 2, tmp_path, env)
    assert len(ran) == len(set(ran)) == 10


def test_circleci_config_parallelism(tmp_path: Path, ci_env: dict[str, str]) -> None:
    config = yaml.safe_load((INTEGRATIONS / "circleci" / "config.yml").read_text())
    job = config["jobs"]["test"]
    assert job["parallelism"] == 3
    job["environment"]["LAPTIME_CI_SPEC"] = ci_env["LAPTIME_CI_SPEC"]
    env = {**ci_env, "CIRCLECI": "true", "CIRCLE_WORKFLOW_ID": "wf", "CIRCLE_JOB": "test"}

    def steps(index: int) -> list[Step]:
        env["CIRCLE_NODE_INDEX"], env["CIRCLE_NODE_TOTAL"] = str(index - 1), "3"
        return circleci_steps(job)

    ran = run_shards(steps, 3, tmp_path, env)
    assert len(ran) == len(set(ran)) == 10
