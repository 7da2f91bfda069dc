"""CI configuration for a split: GitHub Actions, GitLab CI and CircleCI, one entry per planned
job, each with its runner's own setup, install step and command.

pytest's snippets come from `ci_loop` (start the job clock, install the client, run with
`--laptime-upload`: listed arguments or `--laptime-shard`); every snippet of another runner
runs that runner's command from `runner_commands`, writing JUnit XML and uploading it
(`runner_loop`). Values are written as JSON strings (valid
YAML double-quoted scalars), so a hostile test name cannot end the scalar; commands are
shell-quoted by `shlex`.

A stored plan's snippets (`plan_id` given) set LAPTIME_LABELS=plan=<id>,shard=I/N for every
step of job I of N (analysis/ci/plan_labels.py), so the client's upload is matched to the plan
(docs/planner.md#did-it-come-true-plans-that-close-the-loop); without an id they open with
a note saying their runs cannot be matched.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from analysis.ci import loop as ci_loop
from analysis.ci import runner_loop
from analysis.ci.config import (
    github_matrix_entry,
    unstored_note,
)
from analysis.ci.loop import GITHUB_MATRIX_HEAD, GITHUB_START_CLOCK, github_env
from analysis.ci.plan_labels import LABELS_VAR, plan_labels
from analysis.ci.runner_commands import JobSelection


@dataclass(frozen=True)
class RunnerSetup:
    """How a CI machine gets ready to run one runner's tests."""

    github_steps: tuple[str, ...]  # YAML lines of steps, indented under `steps:`
    image: str  # container image for GitLab and CircleCI
    install: str  # shell command installing the project's dependencies ("" for none)


_NODE = RunnerSetup(
    ("- uses: actions/setup-node@v4", "  with:", "    node-version: 20", "- run: npm ci"),
    "node:20",
    "npm ci",
)
_JAVA = ("- uses: actions/setup-java@v4", "  with:", "    distribution: temurin")
SETUPS: dict[str, RunnerSetup] = {
    "pytest": RunnerSetup(
        ("- uses: actions/setup-python@v5", "- run: pip install -e . pytest"),
        "python:3.12",
        "pip install -e . pytest",
    ),
    "jest": _NODE,
    "vitest": _NODE,
    "mocha": _NODE,
    "cypress": _NODE,
    "playwright": RunnerSetup(
        (*_NODE.github_steps, "- run: npx playwright install --with-deps"),
        "mcr.microsoft.com/playwright:v1.49.0-noble",
        "npm ci",
    ),
    "rspec": RunnerSetup(
        ("- uses: ruby/setup-ruby@v1", "  with:", "    bundler-cache: true"),
        "ruby:3.3",
        "bundle install",
    ),
    "phpunit": RunnerSetup(
        (
            "- uses: shivammathur/setup-php@v2",
            "  with:",
            "    php-version: '8.3'",
            "- run: composer install --no-interaction --no-progress",
        ),
        "composer:2",
        "composer install --no-interaction --no-progress",
    ),
    "go": RunnerSetup(
        ("- uses: actions/setup-go@v5", "  with:", "    go-version: stable"),
        "golang:1.23",
        "go mod download",
    ),
    "maven": RunnerSetup(
        (*_JAVA, "    java-version: 21", "    cache: maven"),
        "maven:3-eclipse-temurin-21",
        "",
    ),
    "gradle": RunnerSetup(
        (*_JAVA, "    java-version: 21", "- uses: gradle/actions/setup-gradle@v4"),
        "gradle:8-jdk21",
        "",
    ),
    "nextest": RunnerSetup(
        (
            "- uses: dtolnay/rust-toolchain@stable",
            "- uses: taiki-e/install-action@nextest",
        ),
        "rust:1",
        "cargo install cargo-nextest --locked",
    ),
    "dotnet": RunnerSetup(
        ("- uses: actions/setup-dotnet@v4", "  with:", "    dotnet-version: 8.0.x"),
        "mcr.microsoft.com/dotnet/sdk:8.0",
        "dotnet restore",
    ),
    "bazel": RunnerSetup(
        ("- uses: bazel-contrib/setup-bazel@0.9.1",),
        "gcr.io/bazel-public/bazel:latest",
        "",
    ),
}


def _scalar(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _case(variable: str, commands: Sequence[str], first: int, indent: str) -> list[str]:
    """A shell `case` choosing this job's command by its index (no eval of data)."""
    lines = [f'{indent}case "${variable}" in']
    for i, command in enumerate(commands, start=first):
        lines.append(f"{indent}  {i}) {command} ;;")
    lines.append(f'{indent}  *) echo "no planned tests for job ${variable}"; exit 1 ;;')
    lines.append(f"{indent}esac")
    return lines


def _unsafe(commands: Sequence[str]) -> bool:
    # A line break inside a (quoted) argument would break the YAML block around it.
    return any("\n" in c or "\r" in c for c in commands)


_UNSAFE = "# A selected test name holds a line break: run `laptime shard` in each job instead.\n"


def _looped(runner: str, commands: Sequence[str]) -> list[str]:
    return [runner_loop.run_command(runner, command) for command in commands]


def github_actions(
    runner: str,
    selections: Sequence[JobSelection],
    *,
    plan_id: str | None = None,
    server: bool = False,
) -> str:
    """A GitHub Actions job with one matrix entry per planned job, in the runner's terms."""
    setup = SETUPS[runner]
    lines = list(GITHUB_MATRIX_HEAD)
    for i, selection in enumerate(selections, start=1):
        lines += github_matrix_entry(i, len(selections), plan_id)
        lines.append(f"            command: {_scalar(selection.command)}")
    lines += github_env(plan_id is not None)
    lines += [
        "    steps:",
        f"      - run: {_scalar(GITHUB_START_CLOCK)}  # first: the job's setup counts",
        "      - uses: actions/checkout@v4",
        "      - uses: actions/setup-python@v5  # for the laptime client",
    ]
    lines += [f"      {line}" for line in setup.github_steps]
    lines += [f"      - run: {_scalar(step)}" for step in runner_loop.setup_steps(runner)[1:]]
    lines += [
        "      - run: |",
        f"          {runner_loop.run_command(runner, '${{ matrix.command }}')}",
    ]
    lines += [f"          {line}" for line in runner_loop.finish_lines(runner)]
    return unstored_note(plan_id, server=server) + "\n".join(lines) + "\n"


def gitlab_ci(
    runner: str,
    selections: Sequence[JobSelection],
    *,
    plan_id: str | None = None,
    server: bool = False,
) -> str:
    """A GitLab CI job run `parallel: N` times, each picking its command by CI_NODE_INDEX."""
    commands = [s.command for s in selections]
    if _unsafe(commands):
        return _UNSAFE
    setup = SETUPS[runner]
    lines = ["test:", f"  image: {_scalar(setup.image)}", f"  parallel: {len(commands)}"]
    if plan_id is not None:
        # Job variables reach after_script too (where uploads usually run); GitLab expands
        # the predefined CI_NODE_INDEX (1..N) and CI_NODE_TOTAL inside them.
        labels = plan_labels(plan_id, "${CI_NODE_INDEX}/${CI_NODE_TOTAL}")
        lines += ["  variables:", f"    {LABELS_VAR}: {_scalar(labels)}"]
    # before_script and script share one shell: the clock starts before any install.
    start, *installs = runner_loop.setup_steps(runner)
    steps = [start, *([setup.install] if setup.install else []), *installs]
    lines += ["  before_script:", *(f"    - {_scalar(step)}" for step in steps)]
    lines += ["  script:", "    - |"]
    lines += _case("CI_NODE_INDEX", _looped(runner, commands), 1, "      ")
    lines += [f"      {line}" for line in runner_loop.finish_lines(runner)]
    return unstored_note(plan_id, server=server) + "\n".join(lines) + "\n"


def circleci(
    runner: str,
    selections: Sequence[JobSelection],
    *,
    plan_id: str | None = None,
    server: bool = False,
) -> str:
    """A CircleCI job with `parallelism: N`, each node picking its command by CIRCLE_NODE_INDEX."""
    commands = [s.command for s in selections]
    if _unsafe(commands):
        return _UNSAFE
    setup = SETUPS[runner]
    lines = [
        "version: 2.1",
        "jobs:",
        "  test:",
        "    docker:",
        f"      - image: {_scalar(setup.image)}",
        f"    parallelism: {len(commands)}",
        "    steps:",
        "      - checkout",
    ]
    # `environment:` is not expanded and nodes count from 0: values the shell computes are
    # exported through BASH_ENV, which every later step sources; the clock goes first.
    exports = [f'echo "export {ci_loop.JOB_STARTED_VAR}=$(date +%s)" >> "$BASH_ENV"']
    if plan_id is not None:
        labels = plan_labels(plan_id, "$((CIRCLE_NODE_INDEX + 1))/$CIRCLE_NODE_TOTAL")
        exports.append(f'echo "export {LABELS_VAR}={labels}" >> "$BASH_ENV"')
    lines[7:7] = ["      - run:", "          name: laptime job start"]
    lines.insert(9, f"          command: {_scalar(chr(10).join(exports))}")
    if setup.install:
        lines.append(f"      - run: {_scalar(setup.install)}")
    lines += [f"      - run: {_scalar(step)}" for step in runner_loop.setup_steps(runner)[1:]]
    lines += ["      - run:", "          name: tests", "          command: |"]
    lines += _case("CIRCLE_NODE_INDEX", _looped(runner, commands), 0, "            ")
    lines += [f"            {line}" for line in runner_loop.finish_lines(runner)]
    lines += ["workflows:", "  tests:", "    jobs: [test]"]
    return unstored_note(plan_id, server=server) + "\n".join(lines) + "\n"


# The config keys holding a CI snippet.
SNIPPET_KEYS = ("github_actions", "gitlab_ci", "circleci", "shell")


def runner_snippets(
    runner: str,
    selections: Sequence[JobSelection],
    pytest_args: Sequence[Sequence[str]],
    *,
    plan_id: str | None = None,
    server: bool = False,
) -> dict[str, str]:
    """Every CI snippet of a plan's jobs: pytest's from the jobs' pytest arguments (closing
    the loop, `server` when a server hands the plan out), the runner's own command elsewhere;
    none for a runner laptime cannot set up."""
    out: dict[str, str] = {}
    if runner == "pytest":
        # Every pytest snippet installs the client, runs and uploads (analysis/ci/loop.py).
        return {
            "github_actions": ci_loop.github_actions(pytest_args, plan_id=plan_id, server=server),
            "gitlab_ci": ci_loop.gitlab_ci(pytest_args, plan_id=plan_id, server=server),
            "circleci": ci_loop.circleci(pytest_args, plan_id=plan_id, server=server),
            "shell": ci_loop.shell_script(len(pytest_args)),
        }
    if runner in SETUPS:
        out["github_actions"] = github_actions(runner, selections, plan_id=plan_id, server=server)
        out["gitlab_ci"] = gitlab_ci(runner, selections, plan_id=plan_id, server=server)
        out["circleci"] = circleci(runner, selections, plan_id=plan_id, server=server)
    return out


def with_plan_labels(
    config: Mapping[str, Any], pytest_args: Sequence[Sequence[str]], plan_id: str | None
) -> dict[str, Any]:
    """A split plan's `config` with its snippets remade as the server hands them out: for
    the stored plan `plan_id`, or (None) with pytest jobs asking for their shard; from the
    config's `selections` and each job's `pytest_args`; other keys are kept."""
    if not any(key in config for key in SNIPPET_KEYS):
        return dict(config)
    selections = [
        JobSelection(str(s["runner"]), tuple(s["args"]), str(s["command"]))
        for s in config["selections"]
    ]
    remade = runner_snippets(
        str(config["runner"]),
        selections,
        [tuple(args) for args in pytest_args],
        plan_id=plan_id,
        server=True,
    )
    return {**config, **{key: text for key, text in remade.items() if key in config}}


def pytest_commands(args_per_job: Sequence[Sequence[str]]) -> list[JobSelection]:
    """pytest's selections from its per-job arguments (the split plan's `pytest_args`)."""
    return [
        JobSelection("pytest", tuple(args), shlex.join(["python", "-m", "pytest", *args]))
        for args in args_per_job
    ]
