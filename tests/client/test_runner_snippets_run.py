"""A non-pytest runner's snippet runs as the page shows it and closes the loop: a
live server holding a Jest history, the recommendations page's real HTML, its
GitHub Actions snippet's `run:` steps run per matrix job in a fresh checkout of a generated
Jest project (`npm ci` from its lockfile, jest-junit installed by the snippet, the client
installed by the snippet from ./client through LAPTIME_CI_SPEC, the variables GitHub sets).
Each job's upload arrives (a failing test's job too, which then fails), every test runs
in exactly one job, and "Did it come true?" has
the pipeline with every job matched and measured.

Node's packages come from npm's local cache (scripts/test.sh fills it with jest@29 and
jest-junit@16), as a CI's npm cache would give them; without npm the test says "tools missing".
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from tests.client.conftest import ROOT
from tests.conftest import LiveServer, make_project
from tests.snippets import accuracy_pipeline, ci_job_status, github_jobs, page_snippets
from tests.tools import require, tool_missing
from tests.uploads import upload_all

RUN_ID = "7070"
GITHUB = "GitHub Actions matrix"
# Seconds per test in the history, by test file: four files, a file split over two jobs.
JEST_TESTS = {"a": (12.0, 12.0, 11.0), "b": (15.0, 14.0), "c": (20.0,), "d": (9.0, 8.0)}
# The one test that fails: its job still uploads, then fails as the tests did.
FAILING = "tests/c.test.js::c0"
PACKAGE = {
    "name": "snippet-user-jest",
    "version": "1.0.0",
    "private": True,
    "devDependencies": {"jest": "^29"},
}


def nodeids() -> list[str]:
    return [
        f"tests/{f}.test.js::{f}{i}" for f, times in JEST_TESTS.items() for i in range(len(times))
    ]


def jest_history() -> bytes:
    """A jest-junit report as the snippet has it written: a suite per test file (its path)."""
    suites = "".join(
        f'<testsuite name="tests/{f}.test.js" tests="{len(times)}">'
        + "".join(f'<testcase classname="" name="{f}{i}" time="{s}"/>' for i, s in enumerate(times))
        + "</testsuite>"
        for f, times in JEST_TESTS.items()
    )
    total = sum(sum(t) for t in JEST_TESTS.values())
    return f'<testsuites name="jest tests" time="{total}">{suites}</testsuites>'.encode()


def write_project(root: Path, lock: Path) -> None:
    """A checkout of a Jest project: package.json, its lockfile, and tests that log their run
    (FAILING then fails)."""
    (root / "tests").mkdir(parents=True)
    (root / "package.json").write_text(json.dumps(PACKAGE))
    shutil.copy(lock, root / "package-lock.json")
    for f, times in JEST_TESTS.items():
        body = "const fs = require('fs');\n" + "".join(
            f"test('{f}{i}', () => {{\n"
            f"  fs.appendFileSync(process.env.RAN_LOG, 'tests/{f}.test.js::{f}{i}\\n');\n"
            + (
                "  throw new Error('a real failure');\n"
                if f"tests/{f}.test.js::{f}{i}" == FAILING
                else ""
            )
            + "});\n"
            for i in range(len(times))
        )
        (root / "tests" / f"{f}.test.js").write_text(body)


@pytest.fixture(scope="module")
def npm_cache() -> str:
    """npm's cache holding jest@29 and jest-junit@16 (a "tools missing" skip without them)."""
    require("node", "node", "Node.js")
    npm = require("npm", "npm", "Node.js's npm")
    done = subprocess.run(
        [npm, "config", "get", "cache"], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


@pytest.fixture(scope="module")
def lockfile(npm_cache: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's package-lock.json (`npm ci` needs one), resolved from npm's cache, which
    must hold jest-junit too (the snippet installs it)."""
    work = tmp_path_factory.mktemp("lock")
    (work / "package.json").write_text(json.dumps(PACKAGE))
    (work / "check").mkdir()
    for cwd, packages in ((work / "check", ["jest-junit@16"]), (work, [])):
        done = subprocess.run(
            ["npm", "install", "--package-lock-only", "--offline", "--no-audit", *packages],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            tool_missing("jest", "jest@29 and jest-junit@16 are not in the local npm cache")
    return work / "package-lock.json"


def test_the_pages_jest_snippet_runs_and_closes_the_loop(
    live_server: LiveServer,
    engine: Engine,
    bare_venv: Path,
    npm_cache: str,
    lockfile: Path,
    tmp_path: Path,
) -> None:
    project = make_project(engine, public=True)
    upload_all(
        live_server,
        project.upload_token,
        [("jest-junit.xml", jest_history(), {"pipeline": f"h{i}"}) for i in range(2)],
    )
    ask = {"jobs": "2", "granularity": "file"}
    # A read stores no plan: the page's own snippet says how to get one whose runs are matched.
    untracked = page_snippets(live_server, project.slug, ask)[GITHUB]
    assert "Track this plan" in untracked, untracked
    tracked = page_snippets(live_server, project.slug, ask, track=True)
    assert set(tracked) == {GITHUB}  # every CI job the page shows runs below
    snippet = tracked[GITHUB]
    assert "npx jest" in snippet, snippet
    assert "plan=" in snippet, snippet
    settings = {
        "LAPTIME_URL": live_server.url,
        "LAPTIME_PROJECT": project.slug,
        "LAPTIME_TOKEN": project.upload_token,
        "LAPTIME_READ_TOKEN": project.read_token,
        "LAPTIME_CI_SPEC": str(ROOT / "client"),  # a local path, as a wheel or index would be
    }
    jobs = github_jobs(snippet, settings)
    assert len(jobs) == 2
    ran: list[str] = []
    for index, job in enumerate(jobs, start=1):
        checkout = tmp_path / f"job{index}"
        write_project(checkout, lockfile)
        ci = {
            "PATH": f"{bare_venv}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(tmp_path),
            "RAN_LOG": str(checkout / "ran.log"),
            # setup-node's npm cache: packages come from it, the registry only when missing.
            "npm_config_cache": npm_cache,
            "npm_config_prefer_offline": "true",
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_RUN_ID": RUN_ID,
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_JOB": "test",
            "GITHUB_SHA": "c0ffee",
        }
        status, output, steps = ci_job_status(job, cwd=checkout, env=ci, timeout=300)
        assert re.search(r"upload \d+: queued", output), output
        if FAILING.partition("::")[0] in job.scripts[-1]:
            # The failing job uploads, then exits with jest's status in its last step.
            assert (status, steps) == (1, len(job.scripts)), output
        else:
            assert status == 0, output
        ran += (checkout / "ran.log").read_text().splitlines()
    # Every test of the project ran, each in exactly one job.
    assert sorted(ran) == sorted(nodeids())
    pipeline = accuracy_pipeline(live_server, project.slug, project.read_token, RUN_ID, len(jobs))
    assert pipeline["complete"] is True, pipeline
    assert all(j["wall_s"]["measured"] is not None for j in pipeline["jobs"]), pipeline
    with engine.connect() as conn:
        # The uploads hold the tests under the history's own names and files, so the next
        # plan reads them as the same tests, selectable by path.
        uploaded = conn.execute(
            text(
                "SELECT tc.nodeid, tc.file FROM test_result tr"
                " JOIN test_case tc ON tc.id = tr.test_id JOIN run r ON r.id = tr.run_id"
                " WHERE r.project_id = :p AND r.pipeline LIKE :r"
            ),
            {"p": project.id, "r": f"{RUN_ID}%"},
        ).all()
        assert sorted(uploaded) == sorted((n, n.partition("::")[0]) for n in nodeids())
        # Each upload carries its job's clock, started by the snippet's first step.
        walls = conn.execute(
            text("SELECT job_wall_s FROM run WHERE project_id = :p AND pipeline LIKE :r"),
            {"p": project.id, "r": f"{RUN_ID}%"},
        ).scalars()
        assert [w is not None for w in walls] == [True] * len(jobs)
