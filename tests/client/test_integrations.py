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
    after = job.get("after_script", [])
    return [Step(main, env)] + ([Step("\n".join(after), env, always=True)] if after else [])


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
    github_env = cwd.parent / f".{cwd.name}.github_env"  # what steps append for later steps
    github_env.write_text("")
    carried: dict[str, str] = {}
    for step in steps:
        if exit_code and not step.always:
            continue
        done = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", step.script],
            cwd=cwd,
            env={**env, **carried, **step.env, "GITHUB_ENV": str(github_env)},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        output.append(done.stdout + done.stderr)
        carried |= dict(line.partition("=")[::2] for line in github_env.read_text().splitlines())
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
                "client-spec": ci_env["LAPTIME_CI_SPEC"],
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
        # CircleCI's BASH_ENV: a file every step's bash sources.
        env["BASH_ENV"] = str(tmp_path / f"bash_env{index}")
        Path(env["BASH_ENV"]).write_text("")
        return circleci_steps(job)

    ran = run_shards(steps, 3, tmp_path, env)
    assert len(ran) == len(set(ran)) == 10


# integrations that close the loop and stay fresh.
GITHUB = INTEGRATIONS / "github"
WORKFLOW_EXPRESSION = re.compile(r"\$\{\{\s*(matrix|vars|secrets)\.([\w-]+)\s*\}\}")
STARTS_CLOCK = re.compile(r"LAPTIME_JOB_STARTED_AT=.*\$\(date \+%s\)")
INSTALLS = re.compile(r"pip install")


def _first_index(texts: list[str], pattern: re.Pattern[str]) -> int:
    return next(i for i, t in enumerate(texts) if pattern.search(t))


def test_every_integration_parses_and_starts_the_clock_before_any_install() -> None:
    workflow = yaml.safe_load((GITHUB / "example-workflow.yml").read_text())
    github = [str(s.get("run", s.get("uses", ""))) for s in workflow["jobs"]["test"]["steps"]]
    gitlab = yaml.safe_load((INTEGRATIONS / "gitlab" / "laptime.gitlab-ci.yml").read_text())
    gitlab_lines = gitlab[".laptime-pytest"]["before_script"]
    circle = yaml.safe_load((INTEGRATIONS / "circleci" / "config.yml").read_text())
    circle_steps = [str(s) for s in circle["jobs"]["test"]["steps"]]
    for steps in (github, gitlab_lines, circle_steps):
        assert _first_index(steps, STARTS_CLOCK) < _first_index(steps, INSTALLS), steps
    assert _first_index(github, STARTS_CLOCK) == 0  # before checkout even
    action = yaml.safe_load((GITHUB / "action.yml").read_text())
    install = action["runs"]["steps"][0]["run"]
    assert install.index("LAPTIME_JOB_STARTED_AT") < install.index("pip install")


def test_the_github_cache_key_is_unique_per_run_and_restores_the_newest() -> None:
    workflow = yaml.safe_load((GITHUB / "example-workflow.yml").read_text())
    [cache] = [s for s in workflow["jobs"]["test"]["steps"] if "actions/cache" in s.get("uses", "")]
    assert "${{ github.run_id }}" in cache["with"]["key"]
    assert "${{ github.run_attempt }}" in cache["with"]["key"]
    restore = cache["with"]["restore-keys"].splitlines()
    assert restore
    assert all(cache["with"]["key"].startswith(prefix) for prefix in restore)
    circle = yaml.safe_load((INTEGRATIONS / "circleci" / "config.yml").read_text())
    [save] = [s["save_cache"] for s in circle["jobs"]["test"]["steps"] if "save_cache" in s]
    assert "{{ epoch }}" in save["key"]


def test_every_shard_restores_the_same_cache_and_folds_its_seconds_in_before_saving() -> None:
    workflow = yaml.safe_load((GITHUB / "example-workflow.yml").read_text())
    [cache] = [s for s in workflow["jobs"]["test"]["steps"] if "actions/cache" in s.get("uses", "")]
    # Shards plan from the cache they restore: no restore prefix may differ by shard.
    assert not any("matrix" in prefix for prefix in cache["with"]["restore-keys"].splitlines())
    action = yaml.safe_load((GITHUB / "action.yml").read_text())
    runs = [str(step.get("run", "")) for step in action["runs"]["steps"]]
    fold = _first_index(runs, re.compile("laptime-ci shard-fold"))
    assert fold > _first_index(runs, re.compile("pytest"))
    assert action["runs"]["steps"][fold].get("if") == "always()"
    gitlab = yaml.safe_load((INTEGRATIONS / "gitlab" / "laptime.gitlab-ci.yml").read_text())
    assert any(
        "laptime-ci shard-fold" in line for line in gitlab[".laptime-pytest"]["after_script"]
    )
    circle = yaml.safe_load((INTEGRATIONS / "circleci" / "config.yml").read_text())
    steps = [str(s) for s in circle["jobs"]["test"]["steps"]]
    assert (
        _first_index(steps, re.compile("pytest"))
        < _first_index(steps, re.compile("shard-fold"))
        < _first_index(steps, re.compile("save_cache"))
    )


def test_no_integration_is_referenced_by_a_moving_branch() -> None:
    texts = {p: p.read_text() for p in INTEGRATIONS.rglob("*") if p.is_file()}
    for path, body in texts.items():
        assert "@main" not in body, path
        assert "raw/main/" not in body, path
    workflow = yaml.safe_load((GITHUB / "example-workflow.yml").read_text())
    uses = [s["uses"] for s in workflow["jobs"]["test"]["steps"] if "uses" in s]
    assert "./.github/actions/laptime" in uses
    assert all(re.search(r"@v\d+$", u) for u in uses if not u.startswith("./")), uses
    assert "integrations/github@<40-hex commit sha>" in texts[GITHUB / "action.yml"]


def test_the_client_spec_is_an_input_and_documented() -> None:
    action = yaml.safe_load((GITHUB / "action.yml").read_text())
    assert "wheel" in action["inputs"]["client-spec"]["description"]
    assert "index" in action["inputs"]["client-spec"]["description"]
    readme = (INTEGRATIONS / "README.md").read_text()
    for needle in (
        "LAPTIME_CI_SPEC",
        "client-spec",
        ".whl",
        "PIP_INDEX_URL",
        "LAPTIME_JOB_STARTED_AT",
    ):
        assert needle in readme, needle


def test_the_example_workflow_runs_each_shard_and_fills_the_accuracy_view(
    tmp_path: Path, ci_env: dict[str, str], engine: Engine, project: ProjectFixture
) -> None:
    """The workflow's run steps and the action's steps (for `uses: ./.github/actions/laptime`),
    resolved as GitHub resolves them; the runs name the shard plan the server handed out."""
    workflow = yaml.safe_load((GITHUB / "example-workflow.yml").read_text())
    action = yaml.safe_load((GITHUB / "action.yml").read_text())
    job = workflow["jobs"]["test"]
    settings = {
        "LAPTIME_URL": ci_env["LAPTIME_URL"],
        "LAPTIME_PROJECT": ci_env["LAPTIME_PROJECT"],
        "LAPTIME_TOKEN": ci_env["LAPTIME_TOKEN"],
        "LAPTIME_READ_TOKEN": ci_env["LAPTIME_READ_TOKEN"],
        "LAPTIME_CI_SPEC": ci_env["LAPTIME_CI_SPEC"],
    }
    env = {k: v for k, v in ci_env.items() if not k.startswith("LAPTIME_")}
    env |= {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "78", "GITHUB_JOB": "test"}
    shards = job["strategy"]["matrix"]["shard"]

    def steps(index: int) -> list[Step]:
        def resolve(text: str) -> str:
            def value(m: re.Match[str]) -> str:
                return str(index) if m[1] == "matrix" else settings.get(m[2], "")

            return WORKFLOW_EXPRESSION.sub(value, text)

        out: list[Step] = []
        for step in job["steps"]:
            if step.get("uses") == "./.github/actions/laptime":
                inputs = {k: resolve(str(v)) for k, v in step["with"].items()}
                out += github_steps(action, inputs)
            elif "run" in step and step["run"] != "pip install -e .":  # the user's project
                out.append(Step(resolve(step["run"])))
        return out

    ran = run_shards(steps, len(shards), tmp_path, env)
    assert len(ran) == len(set(ran)) == 10
    assert shard_labels(engine, project.id, len(shards)) == [f"{i}/3" for i in shards]
    with engine.connect() as conn:
        rows = conn.execute(
            text("SELECT plan_id, job_wall_s FROM run WHERE project_id = :p"), {"p": project.id}
        ).all()
    # One plan for the pipeline, named by every run; the job wall known from the job clock.
    assert len({r.plan_id for r in rows}) == 1
    assert rows[0].plan_id
    assert all(r.job_wall_s is not None for r in rows)
