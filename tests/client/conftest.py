"""Fixtures of the client tests: the client's wheel, a pytest-only venv with it, a user project."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools import OLDEST_CLIENT_PYTHON, oldest_python, tool_missing

ROOT = Path(__file__).resolve().parents[2]

# A user's project: its own `app.client` and `ingest` shadow nothing of ours any more.
PROJECT_FILES = {
    "app/__init__.py": "",
    "app/client.py": "def metadata_from_env():\n    return 'the user\\'s own'\n",
    "ingest/__init__.py": "NAME = 'user ingest'\n",
    "tests/__init__.py": "",
    "tests/conftest.py": (
        "import os\n\n"
        "def pytest_runtest_call(item):\n"
        "    with open(os.environ['RAN_LOG'], 'a') as log:\n"
        "        log.write(item.nodeid + '\\n')\n"
    ),
    "tests/test_mine.py": (
        "import pytest\n"
        "from app.client import metadata_from_env\n"
        "import ingest\n\n"
        "@pytest.mark.parametrize('n', range(8))\n"
        "def test_param(n):\n"
        '    assert metadata_from_env() == "the user\'s own"\n\n'
        "def test_ingest_is_mine():\n"
        "    assert ingest.NAME == 'user ingest'\n\n"
        "def test_broken():\n"
        "    assert 0, 'a real failure'\n"
    ),
    "pytest.ini": "[pytest]\naddopts = -p no:cacheprovider\n",
}
FAILING = "tests/test_mine.py::test_broken"


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The client's wheel, built from a copy of client/ (the tree stays clean)."""
    work = tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT / "client", work / "client", ignore=shutil.ignore_patterns("*.egg-info"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            str(work / "client"),
            "-w",
            str(work / "dist"),
        ],
        check=True,
        timeout=180,
        capture_output=True,
    )
    (built,) = (work / "dist").glob("laptime_ci-*.whl")
    return built


@pytest.fixture(scope="session")
def ci_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with only pytest and the client installed; returns its python."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "pytest", str(wheel)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return python


@pytest.fixture(scope="session")
def oldest_ci_venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Like ci_venv on the oldest Python the client claims; a "tools missing" skip without it."""
    base = oldest_python()
    if base is None:
        tool_missing(
            f"python{OLDEST_CLIENT_PYTHON}",
            "the client claims Python 3.9+: install it (pyenv, deadsnakes) or point "
            "LAPTIME_OLDEST_PYTHON at one",
        )
    venv = tmp_path_factory.mktemp("venv-oldest") / "v"
    subprocess.run([str(base), "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    version = subprocess.run(
        [str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    assert version == OLDEST_CLIENT_PYTHON  # what runs is what the client claims
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "pytest", str(wheel)],
        check=True,
        timeout=300,
        capture_output=True,
    )
    return python


@pytest.fixture(params=["current", "oldest"])
def client_python(request: pytest.FixtureRequest) -> Path:
    """The python of a pytest-only venv with the client: this Python, then the oldest claimed."""
    name = "ci_venv" if request.param == "current" else "oldest_ci_venv"
    python: Path = request.getfixturevalue(name)
    return python


def write_user_project(root: Path) -> None:
    """Lay out PROJECT_FILES under `root`."""
    for name, body in PROJECT_FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)


def run_pytest(
    python: Path, project: Path, *args: str, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """`python -m pytest -q ARGS` in `project` with only `env` (and the venv on PATH)."""
    return subprocess.run(
        [str(python), "-m", "pytest", "-q", *args],
        cwd=project,
        env={"PATH": str(python.parent), "HOME": str(project), **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="session")
def bare_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What setup-python gives a job: a Python with pip and nothing else; its bin directory."""
    venv = tmp_path_factory.mktemp("bare") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    return venv / "bin"
