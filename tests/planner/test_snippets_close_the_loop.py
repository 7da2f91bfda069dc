"""Every pytest snippet a plan hands out closes the loop: in each CI flavour
and for small and large plans, each job exports LAPTIME_JOB_STARTED_AT before any install,
installs the client from LAPTIME_CI_SPEC, and runs pytest with `--laptime-upload` and either
the plan's own arguments (labelled with plan and shard) or `--laptime-shard=I/N`; no
pytest-split and no `.test_durations`. The snippets' shell steps run in real bash with a
`python` on PATH that records how it was called."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from analysis.ci import loop as ci_loop
from analysis.ci import runner_loop
from analysis.ci.plan_labels import UNSTORED_NOTE
from analysis.ci.runner_commands import JobSelection
from analysis.ci.snippets import SETUPS, pytest_commands, runner_snippets
from analysis.split.options import SplitOptions
from analysis.split.plan import plan_splits
from laptime_ci.shards import parse_shard_spec
from laptime_ci.upload import metadata_from_env
from tests.planner.history import one_job
from tests.snippets import CiJob, circleci_jobs, github_jobs, gitlab_jobs, run_ci_job, shell_jobs

PLAN = "0123abcdef45"
HOSTILE = "t.py::a'; touch pwned #\"\\ $(touch x) `id` ${{ secrets.X }}"
SMALL = [("a.py",), (HOSTILE, "b.py"), ("--deselect", "a.py", "--deselect", HOSTILE)]
LARGE = [tuple(f"t{j}_{i}.py" for i in range(ci_loop.LISTED_MAX_ARGS)) for j in range(3)]
SPEC = "laptime-ci @ file:///wheels/laptime_ci-0.1.0-py3-none-any.whl"
SETTINGS = {
    "LAPTIME_URL": "http://laptime.invalid",
    "LAPTIME_PROJECT": "proj",
    "LAPTIME_TOKEN": "up",
    "LAPTIME_READ_TOKEN": "rd",
    "LAPTIME_CI_SPEC": SPEC,
}
# A `python` that records each call (its argv and the variables the loop needs), does nothing.
RECORDER = """#!/bin/bash
{
  printf 'CALL'; printf ' %q' "$@"; printf '\\n'
  printf 'STARTED=%s\\n' "${LAPTIME_JOB_STARTED_AT:-}"
  printf 'LABELS=%s\\n' "${LAPTIME_LABELS:-}"
} >> "$RECORD"
"""


def flavours(args: list[tuple[str, ...]], plan_id: str | None) -> dict[str, list[CiJob]]:
    snippets = runner_snippets("pytest", pytest_commands(args), args, plan_id=plan_id)
    return {
        "github_actions": github_jobs(snippets["github_actions"], SETTINGS),
        "gitlab_ci": gitlab_jobs(snippets["gitlab_ci"], SETTINGS),
        "circleci": circleci_jobs(snippets["circleci"], SETTINGS),
        "shell": shell_jobs(snippets["shell"], len(args), SETTINGS),
    }


def record_job(job: CiJob, tmp_path: Path, name: str) -> list[dict[str, str]]:
    """Run the job with the recording `python`; per call: argv (shell-quoted), started, labels."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python").write_text(RECORDER)
    (bin_dir / "python").chmod(0o755)
    (bin_dir / "pip").write_text(RECORDER.replace("printf 'CALL'", "printf 'CALL -m pip'"))
    (bin_dir / "pip").chmod(0o755)
    record = tmp_path / f"{name}.log"
    checkout = tmp_path / name
    checkout.mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "RECORD": str(record), "HOME": str(tmp_path)}
    run_ci_job(job, cwd=checkout, env=env, timeout=60)
    assert not (checkout / "x").exists()
    assert not (checkout / "pwned").exists()
    lines = record.read_text().splitlines()
    return [
        {"argv": lines[i][len("CALL ") :], "started": lines[i + 1], "labels": lines[i + 2]}
        for i in range(0, len(lines), 3)
    ]


def assert_closes_the_loop(calls: list[dict[str, str]], index: int, total: int) -> list[str]:
    """The job's calls: every one after the clock started, the client installed from the
    spec, then pytest uploading; returns pytest's arguments after `--laptime-upload`."""
    assert all(c["started"].removeprefix("STARTED=").isdigit() for c in calls), calls
    argvs = [shlex.split(c["argv"]) for c in calls]
    installs = [a for a in argvs if a[:3] == ["-m", "pip", "install"]]
    assert any(SPEC in a for a in installs), argvs
    *_, last = argvs
    assert last[:3] == ["-m", "pytest", "--laptime-upload"], argvs
    assert argvs.index(last) > max(argvs.index(a) for a in installs)
    labels = calls[-1]["labels"].removeprefix("LABELS=")
    if labels:
        uploaded = metadata_from_env({"LAPTIME_LABELS": labels}).labels
        assert dict(uploaded) == {"plan": PLAN, "shard": f"{index}/{total}"}
    return last[3:]


@pytest.mark.parametrize("flavour", ["github_actions", "gitlab_ci", "circleci", "shell"])
def test_large_plans_ask_the_server_for_each_shard_and_upload(flavour: str, tmp_path: Path) -> None:
    for plan_id in (PLAN, None):
        jobs = flavours(LARGE, plan_id)[flavour]
        assert len(jobs) == 3
        shards = []
        for index, job in enumerate(jobs, start=1):
            calls = record_job(job, tmp_path, f"{plan_id}-{index}")
            args = assert_closes_the_loop(calls, index, 3)
            [shard] = args
            shards.append(parse_shard_spec(shard.removeprefix("--laptime-shard=")))
        assert shards == [(1, 3), (2, 3), (3, 3)]


@pytest.mark.parametrize("flavour", ["github_actions", "gitlab_ci", "circleci"])
def test_small_stored_plans_run_their_own_arguments_labelled(flavour: str, tmp_path: Path) -> None:
    jobs = flavours(SMALL, PLAN)[flavour]
    got = []
    for index, job in enumerate(jobs, start=1):
        calls = record_job(job, tmp_path, str(index))
        assert calls[-1]["labels"] == f"LABELS=plan={PLAN},shard={index}/3"
        got.append(tuple(assert_closes_the_loop(calls, index, 3)))
    assert got == SMALL


@pytest.mark.parametrize("plan_id", [PLAN, None])
@pytest.mark.parametrize("args", [SMALL, LARGE], ids=["small", "large"])
def test_no_snippet_mentions_pytest_split_or_a_durations_file(
    args: list[tuple[str, ...]], plan_id: str | None
) -> None:
    snippets = runner_snippets("pytest", pytest_commands(args), args, plan_id=plan_id)
    assert set(snippets) == {"github_actions", "gitlab_ci", "circleci", "shell"}
    for key, text in snippets.items():
        assert "pytest-split" not in text
        assert ".test_durations" not in text
        assert "--splits" not in text
        assert "--laptime-upload" in text
        assert ci_loop.CLIENT_SPEC_VAR in text
        if key != "shell":
            yaml.safe_load(text)


def test_a_plans_snippets_close_the_loop_past_the_listing_limit() -> None:
    tests = {f"t{i:03d}.py::test": 10.0 + i for i in range(300)}
    results, runs = one_job(tests, overhead_s=5.0)
    plan = plan_splits(results, runs, SplitOptions(jobs=(3, 3), overhead_s=1.0, granularity="test"))
    config = plan.config
    assert "pytest-split" not in config["github_actions"]
    assert [job.scripts[-1] for job in github_jobs(config["github_actions"], SETTINGS)] == [
        f"python -m pytest --laptime-upload --laptime-shard={i}/3" for i in (1, 2, 3)
    ]


def test_the_job_start_is_exported_before_anything_is_installed() -> None:
    clock: dict[str, Callable[[str], bool]] = {
        "github_actions": lambda s: "GITHUB_ENV" in s and ci_loop.JOB_STARTED_VAR in s,
        "gitlab_ci": lambda s: s.startswith("export " + ci_loop.JOB_STARTED_VAR),
        "circleci": lambda s: ci_loop.JOB_STARTED_VAR in s and "BASH_ENV" in s,
    }
    for name, jobs in flavours(SMALL, PLAN).items():
        if name == "shell":
            continue
        first = jobs[0].scripts[0]
        assert clock[name](first.splitlines()[0]), (name, first)


def test_a_servers_unstored_plan_asks_for_shards_and_an_offline_one_lists_its_args() -> None:
    served = github_jobs(
        runner_snippets("pytest", pytest_commands(SMALL), SMALL, server=True)["github_actions"],
        SETTINGS,
    )
    assert [job.scripts[-1] for job in served] == [
        f"python -m pytest --laptime-upload --laptime-shard={i}/3" for i in (1, 2, 3)
    ]
    offline = runner_snippets("pytest", pytest_commands(SMALL), SMALL)["github_actions"]
    assert offline.startswith(UNSTORED_NOTE)
    entries = yaml.safe_load(offline)["jobs"]["test"]["strategy"]["matrix"]["include"]
    assert [tuple(shlex.split(e["pytest-args"])) for e in entries] == SMALL


# Every runner laptime writes snippets for besides pytest, with a selection holding a hostile
# name; the recording `python`, `npx`, `go`... log each call and run nothing.
OTHER_RUNNERS = sorted(set(SETUPS) - {"pytest"})
# One write per call: the tools of a pipeline (`go test | go-junit-report`) run at once.
ATOMIC_RECORDER = """#!/bin/bash
text="$(printf 'CALL TOOL'; printf ' %q' "$@"
  printf '\\nSTARTED=%s\\nLABELS=%s' "${LAPTIME_JOB_STARTED_AT:-}" "${LAPTIME_LABELS:-}")"
{ flock 9; echo "$text" >&9; } 9>> "$RECORD"
"""
TOOLS = ("npx", "npm", "go", "bundle", "mvn", "cargo", "dotnet", "bazel", "composer", "gem")


def other_selections(runner: str) -> list[JobSelection]:
    return [
        JobSelection(runner, ("a",), shlex.join(["npx", "tool", "a.test"])),
        JobSelection(runner, (HOSTILE,), shlex.join(["npx", "tool", HOSTILE])),
    ]


def record_other_job(job: CiJob, tmp_path: Path, name: str, fail: bool) -> list[str]:
    """Run a non-pytest job with recording tools (`npx` fails when `fail`); its calls' argv."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("python", "laptime-ci", *TOOLS):
        body = ATOMIC_RECORDER.replace("CALL TOOL", f"CALL {tool}")
        if tool == "npx" and fail:
            body += '[ "$1" = tool ] && exit 3\nexit 0\n'
        if tool == "go":  # `go env GOPATH` names where `go install` puts go-junit-report
            body += '[ "$1" = env ] && echo "$HOME/go"\nexit 0\n'
        (bin_dir / tool).write_text(body)
        (bin_dir / tool).chmod(0o755)
    gobin = tmp_path / "go" / "bin"
    gobin.mkdir(parents=True, exist_ok=True)
    (gobin / "go-junit-report").write_text("#!/bin/bash\ncat > /dev/null\n")
    (gobin / "go-junit-report").chmod(0o755)
    record = tmp_path / f"{name}.log"
    checkout = tmp_path / name
    (checkout / "bazel-testlogs" / "t").mkdir(parents=True)  # what `bazel test` leaves
    (checkout / "bazel-testlogs" / "t" / "test.xml").write_text("<testsuites/>")
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "RECORD": str(record), "HOME": str(tmp_path)}
    with pytest.raises(AssertionError) if fail else contextlib.nullcontext():
        run_ci_job(job, cwd=checkout, env=env, timeout=60)
    assert not (checkout / "x").exists()
    assert not (checkout / "pwned").exists()
    lines = record.read_text().splitlines()
    for i in range(0, len(lines), 3):
        assert lines[i + 1].removeprefix("STARTED=").isdigit(), lines[i : i + 3]
        if lines[i + 2] != "LABELS=":
            uploaded = metadata_from_env({"LAPTIME_LABELS": lines[i + 2][7:]}).labels
            assert dict(uploaded) == {"plan": PLAN, "shard": f"{name[-1]}/2"}
    return [lines[i][len("CALL ") :] for i in range(0, len(lines), 3)]


@pytest.mark.parametrize("fail", [False, True], ids=["pass", "fail"])
@pytest.mark.parametrize("runner", OTHER_RUNNERS)
def test_every_runners_snippet_writes_junit_installs_and_uploads(
    runner: str, fail: bool, tmp_path: Path
) -> None:
    snippets = runner_snippets(runner, other_selections(runner), [], plan_id=PLAN)
    jobs = {
        "github_actions": github_jobs(snippets["github_actions"], SETTINGS),
        "gitlab_ci": gitlab_jobs(snippets["gitlab_ci"], SETTINGS),
        "circleci": circleci_jobs(snippets["circleci"], SETTINGS),
    }
    for flavour, flavour_jobs in jobs.items():
        assert len(flavour_jobs) == 2
        for index, job in enumerate(flavour_jobs, start=1):
            argvs = record_other_job(job, tmp_path, f"{flavour}-{fail}-{index}", fail)
            words = [shlex.split(a) for a in argvs]
            install = next(
                i for i, w in enumerate(words) if w[:4] == ["python", "-m", "pip", "install"]
            )
            assert SPEC in words[install]
            [ran] = [i for i, w in enumerate(words) if w[0] == "npx" and "tool" in w]
            assert words[ran][2] == ("a.test" if index == 1 else HOSTILE)
            [upload] = [i for i, w in enumerate(words) if w[:2] == ["laptime-ci", "upload"]]
            assert install < ran < upload, (runner, flavour, argvs)


# Each runner's own way to JUnit XML (its flag, reporter or default report directory).
JUNIT_FLAG = {
    "jest": "--reporters=jest-junit",
    "vitest": "--reporter=junit",
    "mocha": "mocha-junit-reporter",
    "cypress": "--reporter junit",
    "playwright": "--reporter=junit",
    "rspec": "--format RspecJunitFormatter --out laptime-junit.xml",
    "phpunit": "--log-junit laptime-junit.xml",
    "go": 'go-junit-report" -iocopy -set-exit-code -out laptime-junit.xml',
    "maven": "target/surefire-reports/TEST-*.xml",
    "gradle": "build/test-results/test/*.xml",
    "nextest": "[profile.laptime.junit]",
    "dotnet": '--logger "junit;',
    "bazel": "bazel-testlogs/ -name test.xml",
}


@pytest.mark.parametrize("runner", OTHER_RUNNERS)
def test_every_runners_snippet_names_its_junit_report_and_starts_the_clock_first(
    runner: str,
) -> None:
    way = runner_loop.WAYS[runner]
    command = runner_loop.run_command(runner, "true")
    assert JUNIT_FLAG[runner] in f"{way.install}\n{command}\n{way.upload}"
    assert runner_loop.setup_steps(runner)[0] == ci_loop.START_CLOCK
    snippets = runner_snippets(runner, other_selections(runner), [], plan_id=PLAN)
    for key in ("github_actions", "gitlab_ci", "circleci"):
        text = snippets[key]
        yaml.safe_load(text)
        assert text.index(ci_loop.JOB_STARTED_VAR) < text.index("pip install")
        assert text.index("pip install") < text.index("laptime-ci upload")
