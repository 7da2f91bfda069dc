"""Every CI snippet the recommendations page shows runs as shown and closes the loop: a
live server, the page's real HTML, each snippet's shell steps run as its CI runs a
job (a fresh checkout of a generated project, a venv holding only Python, the client installed
by the snippet itself from ./client through LAPTIME_CI_SPEC, the variables the CI sets); every
collected test runs once, each job's upload arrives, and "Did it come true?" has the pipeline.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from tests.client.conftest import ROOT
from tests.conftest import LiveServer, make_project
from tests.snippets import CiJob, accuracy_pipeline, github_jobs, page_snippets, run_ci_job
from tests.uploads import upload_all

RUN_ID = "9090"
PYPROJECT = """[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "snippet-user-project"
version = "0"

[tool.setuptools]
py-modules = []
"""
CONFTEST = """import os

def pytest_runtest_call(item):
    with open(os.environ["RAN_LOG"], "a") as log:
        log.write(item.nodeid + "\\n")
"""
# The snippet flavours a page may show, by heading, and how their CI runs them.
RUNNERS: dict[str, Callable[[str, Mapping[str, str]], list[CiJob]]] = {
    "GitHub Actions matrix": github_jobs,
}
# Headings of config that is not a CI job (lines to paste into test files, pytest flags).
NOT_JOBS = {"Mark the moved files", "Run each job with"}


def small_project() -> dict[str, float]:
    """Four files, one test each: a file split."""
    return {
        f"tests/test_{n}.py::test_one": s for n, s in zip("abcd", (40, 30, 20, 10), strict=True)
    }


def large_project() -> dict[str, float]:
    """210 tests in three files, split per test: more arguments than a snippet lists."""
    return {
        f"tests/test_{f}.py::test_{i:03d}": 1.0 + (i % 7)
        for f in ("x", "y", "z")
        for i in range(70)
    }


CASES = {
    "small": (small_project, {"jobs": "2", "granularity": "file"}),
    "large": (large_project, {"jobs": "3", "granularity": "test"}),
}


def write_project(root: Path, nodeids: list[str]) -> None:
    """A checkout of the user's project: a pyproject and the history's tests, all passing."""
    (root / "tests").mkdir(parents=True)
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "tests" / "conftest.py").write_text(CONFTEST)
    files: dict[str, list[str]] = {}
    for nodeid in nodeids:
        path, _, name = nodeid.partition("::")
        files.setdefault(path, []).append(name)
    for path, names in files.items():
        (root / path).write_text("".join(f"def {n}():\n    pass\n\n" for n in names))


def history_report(seconds: dict[str, float], wall_s: float) -> bytes:
    tests = [{"nodeid": n, "outcome": "passed", "duration_s": s} for n, s in seconds.items()]
    doc = {"format": "laptime-json", "version": 1, "session": {"wall_s": wall_s}, "tests": tests}
    return json.dumps(doc).encode()


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_snippet_on_the_page_runs_and_closes_the_loop(
    case: str, live_server: LiveServer, engine: Engine, bare_venv: Path, tmp_path: Path
) -> None:
    make_history, ask = CASES[case]
    history = make_history()
    project = make_project(engine, public=True)
    upload_all(
        live_server,
        project.upload_token,
        [
            ("h.json", history_report(history, sum(history.values()) + 30), {"pipeline": f"h{i}"})
            for i in range(2)
        ],
    )
    blocks = page_snippets(live_server, project.slug, ask)
    assert set(blocks) - NOT_JOBS == set(RUNNERS), blocks.keys()
    settings = {
        "LAPTIME_URL": live_server.url,
        "LAPTIME_PROJECT": project.slug,
        "LAPTIME_TOKEN": project.upload_token,
        "LAPTIME_READ_TOKEN": project.read_token,
        "LAPTIME_CI_SPEC": str(ROOT / "client"),  # a local path, as a wheel or index would be
    }
    for heading, runner in RUNNERS.items():
        snippet = blocks[heading]
        assert "pytest-split" not in snippet
        assert ".test_durations" not in snippet
        jobs = runner(snippet, settings)
        assert len(jobs) == int(ask["jobs"])
        ran: list[str] = []
        for index, job in enumerate(jobs, start=1):
            checkout = tmp_path / f"{heading[:6]}-{index}"
            write_project(checkout, list(history))
            ci = {
                "PATH": f"{bare_venv}:/usr/bin:/bin",
                "HOME": str(tmp_path),
                "RAN_LOG": str(checkout / "ran.log"),
                "GITHUB_ACTIONS": "true",
                "GITHUB_RUN_ID": RUN_ID,
                "GITHUB_RUN_ATTEMPT": "1",
                "GITHUB_JOB": "test",
                "GITHUB_SHA": "c0ffee",
            }
            output = run_ci_job(job, cwd=checkout, env=ci, timeout=600)
            assert re.search(r"upload \d+: queued", output), output
            ran += (checkout / "ran.log").read_text().splitlines()
        # Every collected test ran in exactly one job.
        assert sorted(ran) == sorted(history)
        pipeline = accuracy_pipeline(
            live_server, project.slug, project.read_token, RUN_ID, len(jobs)
        )
        assert all(j["wall_s"]["measured"] is not None for j in pipeline["jobs"]), pipeline
        assert pipeline["complete"] is True
        # The job clock the snippet starts first reached every upload (GitHub has no own).
        with engine.connect() as conn:
            walls = conn.execute(
                text("SELECT job_wall_s FROM run WHERE project_id = :p AND pipeline LIKE :r"),
                {"p": project.id, "r": f"{RUN_ID}%"},
            ).scalars()
            assert [w is not None for w in walls] == [True] * len(jobs)
