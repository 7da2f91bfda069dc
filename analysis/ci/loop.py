"""How every CI snippet a plan hands out closes the loop: start the job clock, install the CI
client, run this job's tests with the plugin uploading.

Each pytest job of a snippet, whatever its CI flavour (GitHub, GitLab, CircleCI, plain shell):

1. exports LAPTIME_JOB_STARTED_AT first, before any install, so the upload's job wall counts
   the job's setup too (the plan predicts setup + tests);
2. installs the client from LAPTIME_CI_SPEC (default `laptime-ci`; a wheel path, a `pkg @ URL`
   or an index is passed the same way, see integrations/README.md);
3. runs `python -m pytest --laptime-upload` with either the plan's own arguments (a stored plan
   whose arguments fit in the snippet: LAPTIME_LABELS names plan and shard) or
   `--laptime-shard=I/N` (a server's unstored plan, or too many arguments to list: the plugin
   asks the server for shard I of N of the collected tests; the plan it hands out is stored
   and its id travels with the upload). Offline (`laptime plan`, no server) the plan's own
   arguments are listed under a note that their runs cannot be matched.

No pytest-split and no `.test_durations` file: the groups another tool cuts are not the plan
whose predictions "Did it come true?" compares with what ran. Pure: strings in, strings out.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from analysis.ci.plan_labels import LABELS_VAR, UNSTORED_NOTE, plan_labels

JOB_STARTED_VAR = "LAPTIME_JOB_STARTED_AT"
CLIENT_SPEC_VAR = "LAPTIME_CI_SPEC"
DEFAULT_CLIENT_SPEC = "laptime-ci"
# What the snippets read from the CI's settings: where the server is, which project, the upload
# token and the read token the shard request needs (an upload token cannot read plans).
SERVER_VARS = ("LAPTIME_URL", "LAPTIME_PROJECT", "LAPTIME_TOKEN", "LAPTIME_READ_TOKEN")
SECRET_VARS = frozenset({"LAPTIME_TOKEN", "LAPTIME_READ_TOKEN"})
# Past this many pytest arguments in all, a snippet stops listing each job's tests and lets
# the plugin ask the server for its shard instead.
LISTED_MAX_ARGS = 200

# Epoch seconds: what the client's parse_job_start reads; an earlier step's value is kept.
START_CLOCK = f'export {JOB_STARTED_VAR}="${{{JOB_STARTED_VAR}:-$(date +%s)}}"'
INSTALL_CLIENT = f'python -m pip install pytest "${{{CLIENT_SPEC_VAR}:-{DEFAULT_CLIENT_SPEC}}}"'
PYTEST = ("python", "-m", "pytest", "--laptime-upload")


@dataclass(frozen=True)
class LoopJob:
    """One planned job as a snippet runs it: its pytest arguments and, for a listed job of a
    stored plan, the LAPTIME_LABELS naming plan and shard (None when the plugin's own shard
    request names the plan)."""

    index: int  # 1-based
    total: int
    pytest_args: tuple[str, ...]
    labels: str | None

    @property
    def command(self) -> str:
        """The job's shell command, every word quoted."""
        return shlex.join([*PYTEST, *self.pytest_args])


# The opening of a GitHub Actions job whose matrix lists one entry per planned job.
GITHUB_MATRIX_HEAD = (
    "jobs:",
    "  test:",
    "    runs-on: ubuntu-latest",
    "    strategy:",
    "      fail-fast: false",
    "      matrix:",
    "        include:",
)


def listed(args_per_job: Sequence[Sequence[str]], plan_id: str | None, *, server: bool) -> bool:
    """True when the snippet lists each job's own arguments: they fit, and either the plan is
    stored (its runs are matched by label) or no server hands out plans (`laptime plan`
    offline, whose snippet says its runs cannot be matched). A server's unstored plan lets
    each job ask for its shard instead, so its runs are matched to the plan they ran."""
    fits = sum(len(args) for args in args_per_job) <= LISTED_MAX_ARGS
    return fits and (plan_id is not None or not server)


def loop_jobs(
    args_per_job: Sequence[Sequence[str]], plan_id: str | None, *, server: bool = False
) -> list[LoopJob]:
    """How each of the plan's jobs runs and uploads (see the module docstring)."""
    total = len(args_per_job)
    if total <= 1 or listed(args_per_job, plan_id, server=server):
        return [
            LoopJob(
                i, total, tuple(args), plan_labels(plan_id, f"{i}/{total}") if plan_id else None
            )
            for i, args in enumerate(args_per_job, start=1)
        ]
    return [LoopJob(i, total, (f"--laptime-shard={i}/{total}",), None) for i in range(1, total + 1)]


def shard_command(shard: str) -> str:
    """pytest for the shard a CI expression names (`"$CI_NODE_INDEX/$CI_NODE_TOTAL"`): the
    expression is written inside double quotes so the shell expands it and nothing else."""
    return f'{shlex.join(PYTEST)} --laptime-shard="{shard}"'


def shell_script(total: int) -> str:
    """A job of any CI as one bash script: LAPTIME_SHARD=I/N (1-based) picks the shard."""
    lines = [
        "#!/usr/bin/env bash",
        "# Any CI: run this in each of the N jobs with LAPTIME_SHARD=I/N (1-based) and",
        "# " + ", ".join(SERVER_VARS) + " set.",
        "set -euo pipefail",
        START_CLOCK + "  # first: the job's setup counts",
        INSTALL_CLIENT,
        shard_command(f"${{LAPTIME_SHARD:?set LAPTIME_SHARD=I/{total}}}"),
    ]
    return "\n".join(lines) + "\n"


def _json(text: str) -> str:
    # A JSON string is a valid YAML double-quoted scalar: a hostile name cannot end it.
    return json.dumps(text, ensure_ascii=False)


def _yaml_quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# The matrix keys of a GitHub job (GitHub expressions allow `-` in names).
MATRIX_LABELS_KEY = "laptime-labels"
MATRIX_ARGS_KEY = "pytest-args"
# GitHub's start-of-job step: later steps see what a step appends to $GITHUB_ENV.
GITHUB_START_CLOCK = f'echo "{JOB_STARTED_VAR}=$(date +%s)" >> "$GITHUB_ENV"'


def github_env(labels: bool) -> list[str]:
    """The job's `env:`: the server's settings from the repository's variables and secrets,
    the client spec, and the matrix entry's labels for a listed stored plan."""
    lines = ["    env:"]
    for var in SERVER_VARS:
        source = "secrets" if var in SECRET_VARS else "vars"
        lines.append(f"      {var}: ${{{{ {source}.{var} }}}}")
    lines.append(f"      {CLIENT_SPEC_VAR}: ${{{{ vars.{CLIENT_SPEC_VAR} }}}}")
    if labels:
        lines.append(f"      {LABELS_VAR}: ${{{{ matrix.{MATRIX_LABELS_KEY} }}}}")
    return lines


def github_actions(
    args_per_job: Sequence[Sequence[str]], *, plan_id: str | None = None, server: bool = False
) -> str:
    """A GitHub Actions job, one matrix entry per planned job, that runs and uploads it."""
    jobs = loop_jobs(args_per_job, plan_id, server=server)
    lines = list(GITHUB_MATRIX_HEAD)
    for job in jobs:
        lines.append(f"          - group: {job.index}")
        if job.labels is not None:
            lines.append(f"            {MATRIX_LABELS_KEY}: {_json(job.labels)}")
        lines.append(f"            {MATRIX_ARGS_KEY}: {_yaml_quote(shlex.join(job.pytest_args))}")
    lines += github_env(any(job.labels is not None for job in jobs))
    lines += [
        "    steps:",
        f"      - run: {_yaml_quote(GITHUB_START_CLOCK)}  # first: the job's setup counts",
        "      - uses: actions/checkout@v4",
        "      - uses: actions/setup-python@v5",
        "      - run: pip install -e .  # your project and its test dependencies",
        f"      - run: {_yaml_quote(INSTALL_CLIENT)}",
        f"      - run: {shlex.join(PYTEST)} ${{{{ matrix.{MATRIX_ARGS_KEY} }}}}",
    ]
    return _header(jobs) + "\n".join(lines) + "\n"


def _labelled(jobs: Sequence[LoopJob]) -> bool:
    return any(job.labels is not None for job in jobs)


def _sharded(jobs: Sequence[LoopJob]) -> bool:
    return any(arg.startswith("--laptime-shard=") for job in jobs for arg in job.pytest_args)


def _header(jobs: Sequence[LoopJob]) -> str:
    """Why the snippet reads as it does: where the jobs' tests come from and what to set."""
    if not _labelled(jobs) and not _sharded(jobs):
        return UNSTORED_NOTE  # offline: nothing can match these runs to the plan
    how = (
        "each job runs the plan's own tests and its upload names plan and shard"
        if _labelled(jobs)
        else "each job asks the server for its shard of the collected tests and uploads"
    )
    return (
        f"# laptime: {how}, so 'Did it come true?' compares plan and runs.\n"
        "# Set " + ", ".join(SERVER_VARS) + " in the CI's settings;\n"
        f"# {CLIENT_SPEC_VAR} (optional) installs the client from a wheel or an index.\n"
    )


def _case(variable: str, commands: Sequence[str], first: int, indent: str) -> list[str]:
    """A shell `case` choosing this job's command by its index (no eval of data)."""
    lines = [f'{indent}case "${variable}" in']
    lines += [f"{indent}  {i}) {command} ;;" for i, command in enumerate(commands, start=first)]
    lines.append(f'{indent}  *) echo "no planned tests for job ${variable}"; exit 1 ;;')
    lines.append(f"{indent}esac")
    return lines


def gitlab_ci(
    args_per_job: Sequence[Sequence[str]], *, plan_id: str | None = None, server: bool = False
) -> str:
    """A GitLab CI job run `parallel: N` times; CI_NODE_INDEX (1..N) picks its job."""
    jobs = loop_jobs(args_per_job, plan_id, server=server)
    lines = ["test:", '  image: "python:3.12"', f"  parallel: {len(jobs)}"]
    if _labelled(jobs) and plan_id is not None:
        # GitLab expands the predefined CI_NODE_INDEX and CI_NODE_TOTAL inside job variables.
        labels = plan_labels(plan_id, "${CI_NODE_INDEX}/${CI_NODE_TOTAL}")
        lines += ["  variables:", f"    {LABELS_VAR}: {_json(labels)}"]
    # before_script and script share one shell: the clock is started before any install.
    lines += [
        "  before_script:",
        f"    - {_json(START_CLOCK)}",
        '    - "pip install -e ."',
        f"    - {_json(INSTALL_CLIENT)}",
        "  script:",
    ]
    if not _sharded(jobs):
        lines.append("    - |")
        lines += _case("CI_NODE_INDEX", [job.command for job in jobs], 1, "      ")
    else:
        lines.append(f"    - {_json(shard_command('$CI_NODE_INDEX/$CI_NODE_TOTAL'))}")
    return _header(jobs) + "\n".join(lines) + "\n"


def circleci(
    args_per_job: Sequence[Sequence[str]], *, plan_id: str | None = None, server: bool = False
) -> str:
    """A CircleCI job with `parallelism: N`; CIRCLE_NODE_INDEX (0..N-1) picks its job."""
    jobs = loop_jobs(args_per_job, plan_id, server=server)
    # `environment:` is not expanded and nodes count from 0: values the shell computes go
    # through BASH_ENV, which every later step sources.
    exports = [f'echo "export {JOB_STARTED_VAR}=$(date +%s)" >> "$BASH_ENV"']
    if _labelled(jobs) and plan_id is not None:
        labels = plan_labels(plan_id, "$((CIRCLE_NODE_INDEX + 1))/$CIRCLE_NODE_TOTAL")
        exports.append(f'echo "export {LABELS_VAR}={labels}" >> "$BASH_ENV"')
    lines = [
        "version: 2.1",
        "jobs:",
        "  test:",
        "    docker:",
        '      - image: "cimg/python:3.12"',
        f"    parallelism: {len(jobs)}",
        "    steps:",
        "      - run:",
        "          name: laptime job start",
        f"          command: {_json(chr(10).join(exports))}",
        "      - checkout",
        '      - run: "pip install -e ."',
        f"      - run: {_json(INSTALL_CLIENT)}",
        "      - run:",
        "          name: tests",
        "          command: |",
    ]
    if not _sharded(jobs):
        lines += _case("CIRCLE_NODE_INDEX", [job.command for job in jobs], 0, "            ")
    else:
        shard = shard_command("$((CIRCLE_NODE_INDEX + 1))/$CIRCLE_NODE_TOTAL")
        lines.append(f"            {shard}")
    lines += ["workflows:", "  tests:", "    jobs: [test]"]
    return _header(jobs) + "\n".join(lines) + "\n"
