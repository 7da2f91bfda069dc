"""`laptime plan` and `laptime shard` through click, on pytest --durations text files."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli.main import cli

REPORT = """\
============================= slowest durations ==============================
300.00s call     a.py::t1
300.00s call     a.py::t2
400.00s call     b.py::t
200.00s call     c.py::t
============================== 4 passed in 1200.00s ===========================
"""


@pytest.fixture
def report(tmp_path: Path) -> Path:
    path = tmp_path / "job.txt"
    path.write_text(REPORT)
    return path


def test_plan_json_contract(report: Path, tmp_path: Path) -> None:
    out = tmp_path / ".test_durations"
    result = CliRunner().invoke(
        cli,
        ["plan", str(report), "--jobs", "2-3", "--granularity", "file", "--overhead", "100s",
         "--json", "--durations-out", str(out)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    plan = json.loads(result.output)
    assert plan["before"] == {"jobs": 1, "wait_s": 1300.0, "machine_s": 1300.0}
    assert plan["after"]["wait_s"] == 700.0
    assert sorted(tuple(job["members"]) for job in plan["jobs"]) == [("a.py",), ("b.py", "c.py")]
    assert all("predicted_wall_s" in job for job in plan["jobs"])
    assert json.loads(out.read_text())["b.py::t"] == 400.0


def test_plan_pretty_output(report: Path) -> None:
    result = CliRunner().invoke(
        cli, ["plan", str(report), "--jobs", "2", "--granularity", "marker", "--overhead", "0"]
    )
    assert result.exit_code == 0, result.output
    assert "split" in result.output
    assert "pytestmark = pytest.mark.slow" in result.output
    assert "-m 'not slow'" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--jobs", "3-2"], "1 <= min <= max"), (["--budget", "soon"], "not a duration"),
     (["--jobs", "2-100000"], "at most 64 jobs"), (["--budget", "99999h"], "over the limit"),
     (["--objective", "cost"], "price")],
)  # fmt: skip
def test_plan_errors_are_one_line(report: Path, args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["plan", str(report), *args])
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def test_shard_reads_collected_from_stdin(report: Path) -> None:
    collected = "a.py::t1\na.py::t2\nb.py::t\nc.py::t\nd.py::new\n\n5 tests collected in 0.01s\n"
    outputs = []
    for index in (1, 2):
        result = CliRunner().invoke(
            cli,
            ["shard", "--total", "2", "--index", str(index), "--collected", "-", str(report)],
            input=collected,
        )
        assert result.exit_code == 0, result.output
        outputs.append([line for line in result.stdout.splitlines() if line])
    # pytest's arguments, one a line: each file is whole in one shard, so files.
    everything = sorted(outputs[0] + outputs[1])
    assert everything == ["a.py", "b.py", "c.py", "d.py"]


def test_shard_index_is_one_based(report: Path) -> None:
    result = CliRunner().invoke(cli, ["shard", "--total", "2", "--index", "3", str(report)])
    assert result.exit_code == 1
    assert "1-based" in result.output


def test_plan_names_the_model_inputs_a_durations_report_lacks(report: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", str(report), "--overhead", "100s"])
    assert result.exit_code == 0, result.output
    assert "model: the history lacks job_wall_s, startup_s" in " ".join(result.output.split())
    data = json.loads(
        CliRunner().invoke(cli, ["plan", str(report), "--overhead", "100s", "--json"]).output
    )
    (today,) = data["before_jobs"]
    # Today's numbers, from parts: the given overhead is the CI setup, the rest unmeasured.
    assert today["parts"]["ci_setup_s"] == 100.0
    assert today["parts"]["wall_s"] == today["predicted_wall_s"] == 1300.0
    assert "cpu_s" in today["parts"]["inputs_missing"]


def test_offline_plan_says_its_runs_cannot_be_matched(report: Path) -> None:
    # `laptime plan` stores nothing: its snippet must not pretend to close the loop.
    result = CliRunner().invoke(
        cli, ["plan", str(report), "--jobs", "2", "--granularity", "file", "--overhead", "0"]
    )
    assert result.exit_code == 0, result.output
    assert "no server stored this plan" in result.output
    assert "LAPTIME_LABELS:" not in result.output
    assert "plan=" not in result.output


def test_a_junit_history_is_not_told_about_the_allocator(report: Path) -> None:
    # It lacks every plugin measure, malloc too: the one line above says so, no second one.
    result = CliRunner().invoke(cli, ["plan", str(report), "--overhead", "100s"])
    said = " ".join(result.output.split())
    assert "malloc" in said
    assert "dynamic malloc thresholds" not in said


def test_plan_text_prints_each_job_command_whole_on_one_line(tmp_path: Path) -> None:
    # A long selection (many long file names) must not be cut or wrapped: copy-paste runs it.
    lines = [f"{1 + i % 7}.00s call     tests/some/deep/package/test_module_{i:03d}.py::t"
             for i in range(60)]  # fmt: skip
    report = tmp_path / "job.txt"
    report.write_text("\n".join(["=== slowest durations ===", *lines, "=== 60 passed ==="]) + "\n")
    args = ["plan", str(report), "--jobs", "2", "--granularity", "file", "--overhead", "0"]
    planned = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
    text = CliRunner().invoke(cli, args).output
    printed = [line.strip() for line in text.splitlines()]
    for job in planned["jobs"]:
        command = shlex.join(["pytest", *job["pytest_args"]])
        assert len(command) > 300
        assert f"{job['name']}: {command}" in printed
    assert not any(line.endswith("...") for line in printed)
