"""docs/cli.md is what the commands' own `--help` says: scripts/cli_reference.py --check."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "cli_reference.py"
DOC = ROOT / "docs" / "cli.md"


def _check(output: Path) -> subprocess.CompletedProcess[str]:
    # A narrow terminal must not change the reference: help is rendered at a fixed width.
    env = {**os.environ, "COLUMNS": "37"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--check", "--output", str(output)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_docs_cli_md_is_current() -> None:
    result = _check(DOC)
    assert result.returncode == 0, result.stderr


def test_every_command_has_a_section() -> None:
    text = DOC.read_text(encoding="utf-8")
    for command in (
        "laptime plan",
        "laptime token create",
        "laptime-ci upload",
        "laptime-ci shard",
    ):
        assert f"`{command}`" in text
        assert f"Usage: {command}" in text or f"usage: {command}" in text


def test_check_fails_on_a_stale_reference(tmp_path: Path) -> None:
    stale = tmp_path / "cli.md"
    stale.write_text(DOC.read_text(encoding="utf-8").replace("--budget", "--time-budget"))
    result = _check(stale)
    assert result.returncode == 1
    assert "differs from the commands' --help" in result.stderr
