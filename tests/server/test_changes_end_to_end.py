"""A real regression, end to end: a small project in a git repository, a commit history run
by pytest with the laptime plugin, each run uploaded by the plugin itself (as a GitHub Actions
job would) to the live server. One commit makes a test slower the way real code does (a longer
sleep in the code it calls); the runs skip that commit and the next one, so laptime can only
give the range; its bisect list, run as printed, finds the commit."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

import httpx
import psycopg
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from app.cli.main import cli
from app.db.changes import change_source, runs_around, series_results
from tests.conftest import Database, LiveServer, ProjectFixture
from tests.server.conftest import wait_for

CLIENT = Path(__file__).resolve().parents[2] / "client"
ROOT = Path(__file__).resolve().parents[2]
RUNS_BEFORE = 25  # runs before the regression
RUNS_AFTER = 16  # runs after it
SKIPPED = 2  # commits made without a run: the regressing one and the next
NODEID = "tests/test_work.py::test_work"


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
           "GIT_COMMITTER_NAME": "dev", "GIT_COMMITTER_EMAIL": "dev@example.com"}  # fmt: skip
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def _commit(repo: Path, message: str, files: dict[str, str]) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _work(delay_s: float) -> str:
    # The code under test: a fixed amount of work, then a wait (as a slower query would).
    return f"import time\n\n\ndef work():\n    sum(range(2000))\n    time.sleep({delay_s})\n"


TEST_FILE = """import time

from work import work


def test_work():
    work()


def test_steady():
    time.sleep(0.05)
"""


def _run_job(repo: Path, server: LiveServer, project: ProjectFixture, run: int, sha: str) -> None:
    """pytest with the plugin uploading, in a GitHub Actions job's environment."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAPTIME_", "GITHUB_"))}
    env.update(
        PYTHONPATH=os.pathsep.join([str(ROOT), str(CLIENT), str(repo)]),
        LAPTIME_URL=server.url, LAPTIME_TOKEN=project.upload_token,
        GITHUB_ACTIONS="true", GITHUB_SHA=sha, GITHUB_REF_NAME="main",
        GITHUB_RUN_ID=str(1000 + run), GITHUB_JOB="unit",
        # Only the laptime plugin: the venv's other pytest plugins cost seconds per start.
        PYTEST_DISABLE_PLUGIN_AUTOLOAD="1",
    )  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "laptime_ci.plugin",
         "--laptime-upload", "tests"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "upload" in (done.stdout + done.stderr).lower(), done.stdout + done.stderr


@pytest.mark.timeout(1200)  # about 45 pytest runs, each a process start and an upload
def test_a_regression_is_found_and_its_commit_bisected(
    live_server: LiveServer,
    project: ProjectFixture,
    database: Database,
    engine: Engine,
    tmp_path: Path,
) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    files = {"work.py": _work(0.10), "tests/test_work.py": TEST_FILE, "README": "v0\n"}
    sha = _commit(repo, "start", files)
    run = 0
    for i in range(RUNS_BEFORE):
        if i:
            sha = _commit(repo, f"docs {i}", {"README": f"v{i}\n"})
        _run_job(repo, live_server, project, run, sha)
        run += 1
    last_good = sha
    # Messages as GitHub writes them: a squashed pull request, then a merged one; the first
    # run after the step is on a commit that names none.
    regression = _commit(repo, "Bigger batch (#141)", {"work.py": _work(0.25)})
    skipped = _commit(
        repo, "Merge pull request #142 from dev/docs\n\nDocs after", {"README": "after\n"}
    )
    for i in range(RUNS_AFTER):
        sha = _commit(repo, f"later {i}", {"README": f"later {i}\n"})
        if i == 0:
            first_bad = sha
        _run_job(repo, live_server, project, run, sha)
        run += 1
    with psycopg.connect(database.dsn) as conn:
        wait_for(
            lambda: (
                conn.execute(
                    "SELECT count(*) FILTER (WHERE status = 'done'), count(*) FROM upload "
                    "WHERE project_id = %s",
                    (project.id,),
                ).fetchone()
                == (run, run)
            ),
            what="every upload ingested",
        )

    # REST: one change, of test_work (and its file): range, commits between, bisect list.
    response = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/changes",
        headers={"Authorization": f"Bearer {project.read_token}"},
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    named = {(c["kind"], c["name"]) for c in answer["changes"]}
    assert ("test", NODEID) in named, _series(database, project)
    assert all(c["name"] != "tests/test_work.py::test_steady" for c in answer["changes"])
    change = next(c for c in answer["changes"] if c["kind"] == "test")
    assert change["commit_before"] == last_good
    assert change["commit_after"] == first_bad
    assert change["between"] == [regression, skipped]
    assert change["between_complete"] is True
    assert [s["commit"] for s in change["bisect"]] == [regression, skipped, first_bad]
    assert 0.1 < change["delta_s"] < 0.2  # the sleep went from 0.10 to 0.25 s
    assert change["pull_requests"] == ["141", "142"]  # the requests that brought the range

    # Its series: every run, split at the step, each point as detection took it (the plugin
    # recorded CPU time, so from every result of the run); the medians are the change's own.
    series = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/changes/{change['id']}/series",
        headers={"Authorization": f"Bearer {project.read_token}"},
    ).json()["points"]
    assert [p["after"] for p in series] == [False] * RUNS_BEFORE + [True] * RUNS_AFTER
    assert series[RUNS_BEFORE]["commit"] == first_bad
    before = [p["duration_s"] for p in series if not p["after"]][-change["runs_before"] :]
    after = [p["duration_s"] for p in series if p["after"]][: change["runs_after"]]
    assert statistics.median(before) == pytest.approx(change["median_before_s"])
    assert statistics.median(after) == pytest.approx(change["median_after_s"])
    # Bounded: with room for three runs' results, the three nearest the step are read.
    with engine.connect() as conn:
        source = change_source(conn, project.id, change["id"])
        assert source is not None
        assert source.cell_id is not None
        runs = runs_around(conn, source.cell_id, source.run_id_after)
        per_run = int(runs["tests"].max())
        kept, results = series_results(
            conn, project.id, runs, "test", source.key, source.run_id_after,
            max_results=3 * per_run,
        )  # fmt: skip
    assert len(kept) == 3
    assert set(results["run_id"]) == set(kept["run_id"])
    assert int((kept["run_id"] >= source.run_id_after).sum()) == 2  # the side after first

    # The bisect list, run as printed, in the repository: the first slower commit is the one.
    timings = {}
    for step in change["bisect"]:
        command = step["command"].replace(" && pytest ", " && python -m pytest -q --durations=0 ")
        done = subprocess.run(
            command, shell=True, cwd=repo, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PYTHONPATH": str(repo), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        timings[step["commit"]] = _call_seconds(done.stdout)
    slower = [c for c, seconds in timings.items() if seconds > 0.2]
    assert slower[0] == regression, timings

    # The page names the same commits; the CLI the same answer.
    page = httpx.get(
        f"{live_server.url}/p/{project.slug}/changes",
        cookies=_session(live_server, project),
    )
    assert page.status_code == 200
    assert f'data-commit-after="{first_bad}"' in page.text
    assert f'data-commit="{regression}"' in page.text
    assert 'data-requests="141 142"' in page.text
    printed = CliRunner().invoke(
        cli, ["changes", "--project", project.slug, "--json"], env={"DATABASE_URL": database.url}
    )
    assert printed.exit_code == 0, printed.output
    assert printed.output.count(regression) >= 2
    text = CliRunner().invoke(
        cli,
        ["changes", "--project", project.slug, "--kind", "test"],
        env={"DATABASE_URL": database.url},
    )
    assert "    requests: #141 #142" in text.output, text.output


def _series(database: Database, project: ProjectFixture) -> str:
    """test_work's stored durations in run order, and the detection backlog (a failure's why)."""
    with psycopg.connect(database.dsn) as conn:
        durations = conn.execute(
            "SELECT round(tr.duration_s::numeric, 3) FROM test_result tr JOIN run r "
            "ON r.id = tr.run_id JOIN test_case tc ON tc.id = tr.test_id "
            "WHERE r.project_id = %s AND tc.nodeid = %s ORDER BY r.id",
            (project.id, NODEID),
        ).fetchall()
        backlog = conn.execute(
            "SELECT run_id, attempts, error FROM change_backlog WHERE project_id = %s",
            (project.id,),
        ).fetchall()
        branches = conn.execute(
            "SELECT DISTINCT branch, job, labels_key FROM run WHERE project_id = %s", (project.id,)
        ).fetchall()
    return f"durations {[float(d) for (d,) in durations]}; backlog {backlog}; cells {branches}"


def _call_seconds(pytest_output: str) -> float:
    """test_work's call time from `--durations=0` (`0.16s call tests/...::test_work`)."""
    for line in pytest_output.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == "call" and parts[2] == NODEID:
            return float(parts[0].rstrip("s"))
    raise AssertionError(f"no call time of {NODEID} in:\n{pytest_output}")


def _session(server: LiveServer, project: ProjectFixture) -> dict[str, str]:
    from tests.pages.conftest import session_cookies

    return session_cookies(server.url, project.read_token)
