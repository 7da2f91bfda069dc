"""`laptime parse`: JSON Lines out, warnings and errors on stderr, exit codes."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from app.cli.main import cli

REPORT = (
    b'<testsuites><testsuite name="pytest">'
    b'<testcase classname="tests.test_x.TestC" name="test_y[a-1]" time="0.5"/>'
    b'<testcase classname="tests.test_x" name="test_z" time="-1">'
    b'<failure message="boom"/></testcase>'
    b"</testsuite></testsuites>"
)
REQUIRED_KEYS = {
    "nodeid",
    "file",
    "classname",
    "function",
    "params",
    "outcome",
    "duration_s",
    "setup_s",
    "call_s",
    "teardown_s",
    "attempts",
    "flaky",
}


def test_parse_prints_one_json_object_per_result(tmp_path: Path) -> None:
    path = tmp_path / "r.xml.gz"
    path.write_bytes(gzip.compress(REPORT))
    result = CliRunner().invoke(cli, ["parse", str(path)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(rows) == 2
    assert set(rows[0]) >= REQUIRED_KEYS
    assert rows[0]["nodeid"] == "tests/test_x.py::TestC::test_y[a-1]"
    assert (rows[0]["function"], rows[0]["params"], rows[0]["duration_s"]) == ("test_y", "a-1", 0.5)
    assert (rows[0]["attempts"], rows[0]["flaky"], rows[0]["setup_s"]) == (1, False, None)
    # A negative time is unknown: null in JSON, never NaN, and a warning on stderr.
    assert rows[1]["duration_s"] is None
    assert rows[1]["outcome"] == "failed"
    assert "NaN" not in result.stdout
    assert result.stderr.startswith(f"{path}: warning: ")


def test_parse_refuses_unparseable_file_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.xml"
    bad.write_bytes(b'<!DOCTYPE x [<!ENTITY a "b">]>\n<testsuite/>')
    result = CliRunner().invoke(cli, ["parse", str(bad)])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert f"{bad}:1:1: [xml-dtd-forbidden]" in result.stderr
    assert "Traceback" not in result.output


def test_parse_format_option_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "r.xml"
    path.write_bytes(REPORT)
    result = CliRunner().invoke(cli, ["parse", "--format", "durations", str(path)])
    assert result.exit_code == 1
    assert "[durations-missing]" in result.stderr


def test_parse_as_a_real_subprocess(tmp_path: Path) -> None:
    good = tmp_path / "good.xml"
    good.write_bytes(REPORT)
    missing = tmp_path / "missing.xml"
    laptime = [sys.executable, "-c", "from app.cli.main import main; main()"]
    ok = subprocess.run([*laptime, "parse", str(good)], capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stderr
    assert [json.loads(line)["outcome"] for line in ok.stdout.splitlines()] == ["passed", "failed"]
    failed = subprocess.run(
        [*laptime, "parse", str(missing)], capture_output=True, text=True, check=False
    )
    assert failed.returncode == 1
    assert failed.stderr.splitlines() == [
        f"Error: {missing}: cannot read: No such file or directory"
    ]
