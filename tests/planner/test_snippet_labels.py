"""Close the loop from a pasted snippet: every CI snippet of a stored plan hands job I of
N the labels `plan=<id>,shard=I/N` in LAPTIME_LABELS, the variable the CI client (plugin and
`laptime-ci upload`) reads, so the accuracy view can match its run; hostile test names still
cannot break the YAML or the shell."""

from __future__ import annotations

import os
import shlex
import string
import subprocess
from pathlib import Path

import pytest
import yaml

from analysis.ci.config import MATRIX_MAX_ARGS, github_actions_matrix
from analysis.ci.plan_labels import LABELS_VAR, UNSTORED_NOTE, UNTRACKED_NOTE, plan_labels
from analysis.ci.runner_commands import JobSelection
from analysis.ci.runner_loop import run_command
from analysis.ci.snippets import SETUPS, circleci, github_actions, gitlab_ci, with_plan_labels
from analysis.split.options import SplitOptions
from analysis.split.plan import plan_splits
from laptime_ci.upload import metadata_from_env
from tests.planner.history import one_job
from tests.snippets import github_matrix_envs

PLAN = "0123abcdef45"
HOSTILE = "a'; rm -rf / #\"\\ $(touch x) `id` ${{ secrets.X }}"
N = 3


def selections(runner: str) -> list[JobSelection]:
    return [
        JobSelection(runner, (HOSTILE,), shlex.join(["run-it", HOSTILE])),
        JobSelection(runner, ("b",), "run-it b"),
        JobSelection(runner, ("c",), "run-it c"),
    ]


def client_labels(value: str) -> dict[str, str]:
    """The labels the CI client uploads when LAPTIME_LABELS holds `value`."""
    return dict(metadata_from_env({LABELS_VAR: value}).labels)


def expected(index: int) -> dict[str, str]:
    return {"plan": PLAN, "shard": f"{index}/{N}"}


def github_job_labels(snippet: str) -> list[dict[str, str]]:
    """Per matrix job, in order: the labels the client reads from the job's environment."""
    return [client_labels(env[LABELS_VAR]) for env in github_matrix_envs(snippet)]


@pytest.mark.parametrize("runner", sorted(SETUPS))
def test_github_actions_names_plan_and_shard_per_job(runner: str) -> None:
    snippet = github_actions(runner, selections(runner), plan_id=PLAN)
    assert github_job_labels(snippet) == [expected(i) for i in range(1, N + 1)]
    entries = yaml.safe_load(snippet)["jobs"]["test"]["strategy"]["matrix"]["include"]
    assert [e["command"] for e in entries] == [s.command for s in selections(runner)]
    assert shlex.split(entries[0]["command"])[1] == HOSTILE


def test_pytest_matrix_names_plan_and_shard_per_job() -> None:
    args = [("--deselect", HOSTILE), (HOSTILE,), ("b.py",)]
    snippet = github_actions_matrix(args, plan_id=PLAN)
    assert github_job_labels(snippet) == [expected(i) for i in range(1, N + 1)]
    entries = yaml.safe_load(snippet)["jobs"]["test"]["strategy"]["matrix"]["include"]
    assert shlex.split(entries[1]["pytest-args"]) == [HOSTILE]


def test_past_the_listing_limit_each_job_asks_for_its_shard() -> None:
    # No pytest-split groups (not the plan); tests/planner/
    # test_snippets_close_the_loop.py runs these jobs.
    many = [tuple(f"t{j}_{i}.py" for i in range(MATRIX_MAX_ARGS)) for j in range(N)]
    snippet = github_actions_matrix(many, plan_id=PLAN)
    assert "--splits" not in snippet
    entries = yaml.safe_load(snippet)["jobs"]["test"]["strategy"]["matrix"]["include"]
    assert [e["pytest-args"] for e in entries] == [f"--laptime-shard={i}/{N}" for i in (1, 2, 3)]


@pytest.mark.parametrize("runner", sorted(SETUPS))
def test_gitlab_ci_names_plan_and_shard_per_node(runner: str) -> None:
    job = yaml.safe_load(gitlab_ci(runner, selections(runner), plan_id=PLAN))["test"]
    assert job["parallel"] == N
    # GitLab expands the job's predefined variables inside its own variables (the runner sets
    # CI_NODE_INDEX 1..N and CI_NODE_TOTAL for `parallel: N`); job variables reach
    # before_script, script and after_script alike, so an upload in after_script sees them.
    template = string.Template(job["variables"][LABELS_VAR])
    got = [
        client_labels(template.substitute(CI_NODE_INDEX=str(i), CI_NODE_TOTAL=str(N)))
        for i in range(1, N + 1)
    ]
    assert got == [expected(i) for i in range(1, N + 1)]
    assert f"1) {run_command(runner, selections(runner)[0].command)} ;;" in job["script"][0]


def test_circleci_names_plan_and_shard_per_node_in_a_real_shell(tmp_path: Path) -> None:
    config = yaml.safe_load(circleci("pytest", selections("pytest"), plan_id=PLAN))
    steps = config["jobs"]["test"]["steps"]
    [labels_step] = [s for s in steps if isinstance(s, dict) and LABELS_VAR in str(s)]
    tests_at = next(i for i, s in enumerate(steps) if "case " in str(s))
    assert steps.index(labels_step) < tests_at  # every later step sources BASH_ENV
    got = []
    for node in range(N):  # CircleCI counts nodes from 0
        bash_env = tmp_path / f"env{node}"
        env = {
            "PATH": os.environ["PATH"],
            "BASH_ENV": str(bash_env),
            "CIRCLE_NODE_INDEX": str(node),
            "CIRCLE_NODE_TOTAL": str(N),
        }
        subprocess.run(["bash", "-c", labels_step["run"]["command"]], env=env, check=True)
        shown = subprocess.run(
            ["bash", "--norc", "-c", f'. "$BASH_ENV"; printf %s "${LABELS_VAR}"'],
            env={**env, "BASH_ENV": str(bash_env)},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        got.append(client_labels(shown))
    assert got == [expected(i) for i in range(1, N + 1)]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("bad", ["", "a b", "a,shard=9/9", "x$(id)", "a\nb", "é", "a" * 65])
def test_a_plan_id_that_is_not_a_plain_token_is_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="plan id"):
        plan_labels(bad, "1/2")


def test_without_an_id_the_snippets_say_their_runs_cannot_be_matched() -> None:
    sel = selections("jest")
    for snippet in (
        github_actions("jest", sel),
        gitlab_ci("jest", sel),
        circleci("jest", sel),
        github_actions_matrix([("a.py",), ("b.py",)]),
    ):
        assert snippet.startswith(UNSTORED_NOTE)
        assert "plan=" not in snippet
        assert "shard=" not in snippet
        yaml.safe_load(snippet)


def test_a_servers_untracked_snippets_say_how_to_have_the_plan_stored() -> None:
    # A server's read stores nothing, and only pytest's jobs ask it for their shard:
    # another runner's snippet names the page's "Track this plan" (and the POST) instead.
    sel = selections("jest")
    for snippet in (
        github_actions("jest", sel, server=True),
        gitlab_ci("jest", sel, server=True),
        circleci("jest", sel, server=True),
    ):
        assert snippet.startswith(UNTRACKED_NOTE)
        assert "Track this plan" in snippet
        assert "plan=" not in snippet
        yaml.safe_load(snippet)


@pytest.mark.parametrize("runner", ["pytest", "maven"])
def test_a_plans_config_is_rewritten_with_its_id(runner: str) -> None:
    results, runs = one_job({"a.py::t": 300.0, "b.py::t": 300.0, "c.py::t": 300.0}, overhead_s=10.0)
    plan = plan_splits(results, runs, SplitOptions(jobs=(N, N), overhead_s=1.0, runner=runner))
    config = with_plan_labels(plan.config, [job.pytest_args for job in plan.jobs], PLAN)
    assert config.keys() == plan.config.keys()
    for key in ("github_actions", "gitlab_ci", "circleci"):
        assert PLAN in config[key]
        assert PLAN not in plan.config[key]
    assert github_job_labels(config["github_actions"]) == [expected(i) for i in range(1, N + 1)]
    others = set(config) - {"github_actions", "gitlab_ci", "circleci"}
    assert others
    assert all(config[k] == plan.config[k] for k in others)
    # Without snippets (a plan that keeps today's layout) there is nothing to rewrite.
    kept = {"test_durations": {"a": 1.0}}
    assert with_plan_labels(kept, [], PLAN) == kept
