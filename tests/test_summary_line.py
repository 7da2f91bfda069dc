"""scripts/summary.py: the closing line of scripts/test.sh counts a real pytest JUnit report and
names the tools whose absence made tests skip."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "summary.py"
LINE = re.compile(
    r"^summary: (\d+) passed, (\d+) failed, (\d+) skipped "
    r"\(tools missing: ([^;]+); (lint ok|LINT FAILED), (\d+)s\)$"
)

SUITE = """
import pytest
from tests.tools import require, tool_missing

def test_ok():
    pass

def test_ok_too():
    pass

def test_broken():
    assert 0

@pytest.fixture
def boom():
    raise RuntimeError("setup fails")

def test_error(boom):
    pass

def test_plain_skip():
    pytest.skip("not on this machine's OS")

def test_maven():
    tool_missing("maven", "the local Maven repository lacks Surefire")

def test_no_such_runner():
    require("laptime-no-such-runner", "nosuchrunner", "apt-get install nosuchrunner")

@pytest.fixture
def old_python():
    tool_missing("python3.9", "install it")

def test_in_fixture(old_python):
    pass
"""


def summarise(report: Path, *args: str) -> str:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(report), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return out.stdout.strip()


def test_a_real_report_gives_counts_and_the_missing_tools(
    pytester: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the suite imports tests.tools
    pytester.makepyfile(test_suite=SUITE)
    report = tmp_path / "report.xml"
    pytester.runpytest_subprocess(f"--junitxml={report}", "-p", "no:cacheprovider")
    text = summarise(report, "--lint", "ok", "--seconds", "512")
    assert text == (
        "summary: 2 passed, 2 failed, 4 skipped "
        "(tools missing: maven, nosuchrunner, python3.9; lint ok, 512s)"
    )
    assert LINE.match(text)


def test_no_tools_missing_and_failed_lint(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytester.makepyfile(test_one="def test_ok():\n    pass\n")
    report = tmp_path / "report.xml"
    pytester.runpytest_subprocess(f"--junitxml={report}", "-p", "no:cacheprovider")
    text = summarise(report, "--lint", "failed", "--seconds", "3")
    assert text == "summary: 1 passed, 0 failed, 0 skipped (tools missing: none; LINT FAILED, 3s)"


def test_a_missing_report_is_a_failure(tmp_path: Path) -> None:
    text = summarise(tmp_path / "absent.xml", "--lint", "ok", "--seconds", "1")
    assert text.startswith("summary: 0 passed, 1 failed")


def test_test_sh_closes_with_this_script() -> None:
    test_sh = (REPO / "scripts" / "test.sh").read_text()
    assert "scripts/summary.py" in test_sh
    assert "<<'PY'" not in test_sh  # no summarising python left in a heredoc
