"""The exit tail end to end: a real pytest process with a slow exit, run under
`laptime-ci run` and uploaded to the live server, lands in run.exit_s, in the runs frame the
planner reads and in the job model's charge for the job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import Engine, text

from analysis.filters import Filters
from analysis.split.job_model import MIN_SHARE, fit_job_model, run_cpu_shares
from app.db.projects import get_project
from app.services.recommendations import load_history
from tests.conftest import LiveServer, ProjectFixture
from tests.plugin.test_run_exit_tail import SLOW_EXIT_S, _env, _project
from tests.server.test_upload_flow import wait_done


def test_the_measured_exit_tail_reaches_the_run_and_the_model(
    live_server: LiveServer, project: ProjectFixture, engine: Engine, tmp_path: Path
) -> None:
    root = _project(tmp_path)
    env = _env(LAPTIME_URL=live_server.url, LAPTIME_TOKEN=project.upload_token, LAPTIME_JOB="e")
    wrapped = [sys.executable, "-m", "pytest", "--laptime-report=r.json", "--laptime-upload"]
    done = subprocess.run(
        [sys.executable, "-m", "laptime_ci.cli", "run", "--", *wrapped],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    exit_s = json.loads((root / "r.json").read_text())["session"]["exit_s"]
    assert exit_s >= SLOW_EXIT_S
    upload_id = int(
        done.stdout.split("laptime-ci run: uploaded 2 tests as upload ")[1].split(":")[0]
    )
    assert wait_done(live_server, project.upload_token, upload_id)["status"] == "done"
    with engine.connect() as conn:
        stored = conn.execute(
            text("SELECT exit_s FROM run WHERE upload_id = :u"), {"u": upload_id}
        ).scalar_one()
        found = get_project(conn, project.slug)
        assert found is not None
        history = load_history(conn, found, Filters())
    assert stored == exit_s
    assert history.runs.set_index("job").loc["e", "exit_s"] == exit_s
    model = fit_job_model(history.results, history.runs)
    parts = model.predict(files=["test_a.py"], n_tests=2, test_s=0.0, workers=1, overhead_s=0.0)
    # Taken at a quiet machine's speed: x the CPU share the run got (1 when it had a core).
    share = run_cpu_shares(history.results, history.runs).fillna(1.0).clip(MIN_SHARE, 1.0)
    assert parts.exit_s == pytest.approx(exit_s * float(share.iloc[0]))
    assert parts.exit_s > 0
    assert "exit_s" not in model.inputs_missing
