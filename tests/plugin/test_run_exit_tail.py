"""`laptime-ci run -- pytest ...`: a real pytest process whose exit is slow (an atexit handler
that stops a "worker pool"), timed from outside; the exit tail reaches the report and the
upload, and the command's exit status stays the tests'."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from laptime_ci.plugin_malloc import ALLOCATOR_ENV
from tests.client.fake_server import fake_server
from tests.plugin.conftest import LAPTIME_VARS

ACCEPTED = {"id": 9, "status": "queued", "url": "/api/v1/uploads/9", "duplicate": False}
# The workload being measured: what the process does after its session, never an assertion
# on time. The measured tail must be at least this.
SLOW_EXIT_S = 0.6
PROJECT = {
    "conftest.py": (
        "import atexit, time\n\n"
        "def _stop_pool():\n"
        f"    time.sleep({SLOW_EXIT_S})\n\n"
        "atexit.register(_stop_pool)\n"
    ),
    "test_a.py": "def test_a():\n    pass\n\ndef test_b():\n    assert 0, 'a real failure'\n",
    "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\n",
}


def _project(root: Path) -> Path:
    for name, text in PROJECT.items():
        (root / name).write_text(text)
    return root


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (*LAPTIME_VARS, *ALLOCATOR_ENV)}
    return {**env, **extra}


def _laptime_ci(root: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "laptime_ci.cli", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_wrapper_measures_the_exit_and_uploads_it(tmp_path: Path) -> None:
    root = _project(tmp_path)
    pytest_cmd = [sys.executable, "-m", "pytest", "--laptime-report=r.json", "--laptime-upload"]
    with fake_server() as server:
        server.posts = [(202, ACCEPTED)]
        env = _env(LAPTIME_URL=server.url, LAPTIME_TOKEN="tok", LAPTIME_JOB="unit")
        done = _laptime_ci(root, "run", "--", *pytest_cmd, env=env)
    assert done.returncode == 1, done.stdout + done.stderr  # the failing test's status
    written = json.loads((root / "r.json").read_text())
    exit_s = written["session"]["exit_s"]
    assert exit_s >= SLOW_EXIT_S
    assert f"laptime-ci run: exit tail {exit_s:.3f} s" in done.stdout
    # One upload, after the exit, carrying the tail: the plugin handed its upload over.
    (request,) = server.requests
    assert json.loads(request.report_bytes("r.json.gz")) == written
    assert request.form()[0]["job"] == ["unit"]


def test_without_the_wrapper_the_report_has_no_exit_tail(tmp_path: Path) -> None:
    root = _project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--laptime-report=r.json"],
        cwd=root,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1
    assert "exit_s" not in json.loads((root / "r.json").read_text())["session"]


def test_a_command_without_a_report_keeps_its_status_and_says_why(tmp_path: Path) -> None:
    done = _laptime_ci(
        tmp_path, "run", "--", sys.executable, "-c", "raise SystemExit(3)", env=_env()
    )
    assert done.returncode == 3
    assert "left no laptime report" in done.stderr


@pytest.mark.parametrize("args", [["run"], ["run", "--"]])
def test_no_command_is_a_usage_error(tmp_path: Path, args: list[str]) -> None:
    assert _laptime_ci(tmp_path, *args, env=_env()).returncode == 2
