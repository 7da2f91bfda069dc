"""Tools outside Python that some tests need (a runner, an old interpreter): when one is absent,
the test skips with a reason that scripts/summary.py counts as "tools missing", so a machine
without them says so on the suite's closing line instead of passing quietly."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path
from typing import NoReturn

import pytest

# The prefix scripts/summary.py looks for in a skip's message.
TOOLS_MISSING = "tools missing"
# The oldest Python the client claims (client/pyproject.toml: requires-python >=3.9).
OLDEST_CLIENT_PYTHON = "3.9"


def tool_missing(tool: str, how: str) -> NoReturn:
    """Skip the running test, naming the absent tool and how to get it."""
    pytest.skip(f"{TOOLS_MISSING}: {tool} ({how})")


def require(executable: str, tool: str, how: str) -> str:
    """The executable's path, or a "tools missing" skip."""
    found = shutil.which(executable)
    if found is None:
        tool_missing(tool, how)
    return found


def oldest_python(version: str = OLDEST_CLIENT_PYTHON) -> Path | None:
    """An interpreter of exactly `version`: $LAPTIME_OLDEST_PYTHON, PATH, pyenv, /usr/bin."""
    candidates = [os.environ.get("LAPTIME_OLDEST_PYTHON", ""), shutil.which(f"python{version}")]
    pyenv = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{pyenv}/versions/{version}.*/bin/python{version}"))
    candidates += [f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for candidate in candidates:
        if candidate and _runs_as(candidate, version):
            return Path(candidate)
    return None


def _runs_as(executable: str, version: str) -> bool:
    """Whether `executable` runs and is Python `version` (a pyenv shim may exist but refuse)."""
    if not (Path(executable).is_file() and os.access(executable, os.X_OK)):
        return False
    try:
        out = subprocess.run(
            [executable, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip() == version
