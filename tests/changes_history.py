"""A default-branch history with one lasting step, uploaded through the live server."""

from __future__ import annotations

import random

from tests.conftest import LiveServer, ProjectFixture
from tests.uploads import upload_all

STEP_AT = 25  # the run (0-based) from which tests/test_a.py::test_slow takes 50% longer
RUNS = 45
SLOW = "tests/test_a.py::test_slow"


def commit_of(i: int) -> str:
    """Run i's commit id."""
    return f"{i:040x}"


def step_report(i: int, rng: random.Random, *, job_tests: int = 4) -> bytes:
    """Run i's JUnit report: test_slow steps up at STEP_AT, the others stay level."""
    slow = (1.5 if i >= STEP_AT else 1.0) * rng.uniform(0.98, 1.02)
    cases = [f'<testcase classname="tests.test_a" name="test_slow" time="{slow:.6f}"/>']
    cases += [
        f'<testcase classname="tests.test_b" name="test_{k}" time="{rng.uniform(0.19, 0.21):.6f}"/>'
        for k in range(job_tests)
    ]
    return (
        '<?xml version="1.0"?><testsuites><testsuite name="pytest">'
        + "".join(cases)
        + "</testsuite></testsuites>"
    ).encode()


def upload_step_history(server: LiveServer, project: ProjectFixture, *, job: str = "unit") -> None:
    """RUNS runs of `job` on main, plus one run of a feature branch (not watched)."""
    rng = random.Random(7)
    uploads = []
    for i in range(RUNS):
        # As the client sends it: HEAD, a commit that did not run, the previous run's commit.
        history = [commit_of(i), f"{i:039x}e", *([commit_of(i - 1)] if i else [])]
        fields = {"job": job, "branch": "main", "commit": commit_of(i), "pipeline": f"main-{i}"}
        uploads.append(("r.xml", step_report(i, rng), {**fields, "first_parent": history}))
    uploads.append(("r.xml", step_report(99, rng), {"job": job, "branch": "topic"}))
    upload_all(server, project.upload_token, uploads)
