"""Real pytest nodes in queue mode: a generated project whose tests log where they ran."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATHS = os.pathsep.join([str(ROOT), str(ROOT / "client")])

CONFTEST = """
import os

import pytest


@pytest.fixture(autouse=True)
def _log_where(request):
    # One line per run, appended atomically: the test's own record of where it ran.
    line = f"{request.node.nodeid} {os.environ['NODE']}@{os.environ.get('LAPTIME_ATTEMPT', '1')}\\n"
    with open(os.environ["RAN_LOG"], "a") as log:
        log.write(line)
    yield
"""

BLOCKING = """
import os
import time


def test_block():
    # Node 1 parks here until the test releases it (or kills it); others pass at once.
    if os.environ["NODE"] == os.environ.get("BLOCK_NODE"):
        open(os.environ["RAN_LOG"] + ".blocked", "w").close()
        while not os.path.exists(os.environ["RAN_LOG"] + ".go"):
            time.sleep(0.05)


def test_then_0():
    pass


def test_then_1():
    pass
"""


def make_suite(
    where: Path, files: int = 6, per_file: int = 2, *, blocking: bool = False
) -> list[str]:
    """A project of `files` x `per_file` passing tests (and `test_a_block.py` first by name);
    its nodeids."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    (where / "conftest.py").write_text(CONFTEST)
    nodeids = []
    if blocking:
        (where / "test_a_block.py").write_text(BLOCKING)
        # Three tests: the heaviest item by estimate, so the first batch holds it.
        nodeids += [f"test_a_block.py::{t}" for t in ("test_block", "test_then_0", "test_then_1")]
    for f in range(files):
        body = "".join(f"def test_{t}():\n    pass\n\n" for t in range(per_file))
        (where / f"test_f{f:02d}.py").write_text(body)
        nodeids += [f"test_f{f:02d}.py::test_{t}" for t in range(per_file)]
    return sorted(nodeids)


def node_env(
    url: str, token: str, slug: str, pipeline: str, node: int, log: Path, **extra: str
) -> dict[str, str]:
    """The environment of node `node` (a CI job) of `pipeline`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LAPTIME_", "GITHUB_", "CI_", "GITLAB", "PYTEST_", "CIRCLE"))
    }
    env.update(
        {
            "PYTHONPATH": PATHS,
            "LAPTIME_URL": url,
            "LAPTIME_TOKEN": token,
            "LAPTIME_PROJECT": slug,
            "LAPTIME_PIPELINE": pipeline,
            "NODE": str(node),
            "RAN_LOG": str(log),
            "LAPTIME_QUEUE_TIMEOUT_S": "5",
        }
    )
    env.update(extra)
    return env


def start_node(
    where: Path, node: int, total: int, env: dict[str, str], *args: str
) -> subprocess.Popen[str]:
    """`pytest --laptime-queue=node/total` in `where`."""
    return subprocess.Popen(
        [sys.executable, "-m", "pytest", f"--laptime-queue={node}/{total}", "-q", "-rA", *args],
        cwd=where,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    """Wait for a node; its exit code and output."""
    out, _ = proc.communicate(timeout=180)
    return proc.returncode, out


def runs(log: Path) -> list[tuple[str, str]]:
    """(nodeid, node@attempt) of every run logged."""
    if not log.exists():
        return []
    return [tuple(line.split(" ", 1)) for line in log.read_text().splitlines() if line]  # type: ignore[misc]


def counts(log: Path) -> Counter[str]:
    """Runs per nodeid."""
    return Counter(nodeid for nodeid, _ in runs(log))


def wait_file(path: Path, timeout_s: float = 60) -> None:
    """Until `path` exists (another process's progress, not a timing)."""
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.05)
