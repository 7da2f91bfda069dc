"""A default-branch history of three-job pipelines whose jobs arrive interleaved, as CI sends
them: each pipeline's slowest job uploads after the next pipeline's first jobs. From STEP_AT
the `slow` job's wall (and so the pipeline's wall and machine time) takes 30% longer."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any

STEP_AT = 22
PIPELINES = 40
JOBS = {"unit": 200.0, "slow": 300.0, "lint": 60.0}  # job wall level, seconds


def commit_of(i: int) -> str:
    """Pipeline i's commit id."""
    return f"{i:040x}"


def job_wall(i: int, job: str, *, step: float) -> float:
    """Pipeline i's wall of `job`: its level with 2% noise, `slow` x(1+step) from STEP_AT."""
    rng = random.Random(f"{i}-{job}")
    level = JOBS[job] * (1.0 + step if job == "slow" and i >= STEP_AT else 1.0)
    return round(level * math.exp(rng.gauss(0.0, 0.02)), 3)


def _report(i: int, job: str) -> bytes:
    """A small steady JUnit report: the tests themselves do not change."""
    rng = random.Random(f"r-{i}-{job}")
    cases = "".join(
        f'<testcase classname="tests.test_{job}" name="test_{k}" '
        f'time="{rng.uniform(0.49, 0.51):.6f}"/>'
        for k in range(3)
    )
    return (
        f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}'
        "</testsuite></testsuites>"
    ).encode()


def pipeline_uploads(
    *, step: float, pipelines: range = range(PIPELINES)
) -> Iterator[tuple[str, bytes, dict[str, Any]]]:
    """(file name, body, fields) in arrival order: unit and lint of pipeline i, then slow of
    pipeline i - 1 (so pipeline i has started arriving before i - 1 is complete)."""
    for i in pipelines:
        for job in ("unit", "lint"):
            yield _upload(i, job, step)
        if i - 1 in pipelines:
            yield _upload(i - 1, "slow", step)
    yield _upload(pipelines[-1], "slow", step)


def _upload(i: int, job: str, step: float) -> tuple[str, bytes, dict[str, Any]]:
    fields = {
        "job": job,
        "branch": "main",
        "commit": commit_of(i),
        "pipeline": f"p-{i}",
        "job_wall_s": job_wall(i, job, step=step),
    }
    return "r.xml", _report(i, job), fields
