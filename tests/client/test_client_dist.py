"""The CI client as a user gets it: its wheel in a fresh venv holding only pytest, run in a
project with its own `app/` and `ingest/` packages against a live server, then with the
server gone (cache, then hash fallback)."""

from __future__ import annotations

import json
import subprocess
import time
import zipfile
from pathlib import Path

import httpx
from sqlalchemy import Engine, text

from tests.client.conftest import FAILING, run_pytest, write_user_project
from tests.client.fake_server import fake_server
from tests.conftest import LiveServer, ProjectFixture

MAX_WHEEL_BYTES = 200 * 1024
SERVER_PACKAGES = ("app", "ingest", "analysis", "figures", "model", "demo", "migrations")


def test_wheel_holds_one_distinctive_package_and_no_dependencies(wheel: Path) -> None:
    assert wheel.stat().st_size < MAX_WHEEL_BYTES
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith("/METADATA"))).decode()
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt")))
    assert {name.split("/")[0] for name in names} == {"laptime_ci", "laptime_ci-0.1.0.dist-info"}
    assert not any(name.split("/")[0] in SERVER_PACKAGES for name in names)
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    assert requires == ['Requires-Dist: pytest>=7; extra == "pytest"']
    assert "Requires-Python: >=3.9" in metadata
    assert b"laptime = laptime_ci.plugin" in entry_points
    assert b"laptime-ci = laptime_ci.cli:run" in entry_points


def _ran(log: Path) -> list[str]:
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return lines


def _stopped_server_url() -> str:
    with fake_server() as server:
        url = server.url
    return url  # the server is gone: connections are refused


def test_user_project_uploads_and_shards_then_survives_the_outage(
    client_python: Path,
    tmp_path: Path,
    live_server: LiveServer,
    project: ProjectFixture,
    engine: Engine,
) -> None:
    python = client_python
    pandas = subprocess.run([str(python), "-c", "import pandas"], capture_output=True, timeout=60)
    assert pandas.returncode != 0  # the client brought none of the server's dependencies
    write_user_project(tmp_path)
    collected = run_pytest(python, tmp_path, "--collect-only", env={})
    nodeids = [line for line in collected.stdout.splitlines() if "::" in line]
    assert len(nodeids) == 10
    log = tmp_path / "ran.log"
    cache = tmp_path / ".laptime" / "durations.json"

    # The server is up: it plans, the run uploads with its shard label.
    env = {
        "RAN_LOG": str(log),
        "LAPTIME_URL": live_server.url,
        "LAPTIME_TOKEN": project.upload_token,
        "LAPTIME_READ_TOKEN": project.read_token,
        "LAPTIME_PROJECT": project.slug,
    }
    done = run_pytest(
        python,
        tmp_path,
        "--laptime-report=r.json",
        "--laptime-upload",
        "--laptime-shard=1/3",
        env=env,
    )
    ran = _ran(log)
    assert done.returncode == (1 if FAILING in ran else 0), done.stdout
    assert f"laptime: shard 1/3: {len(ran)} of 10 tests (server)" in done.stdout
    assert "laptime: uploaded" in done.stdout, done.stdout
    assert 0 < len(ran) < 10
    report = json.loads((tmp_path / "r.json").read_text())
    assert sorted(t["nodeid"] for t in report["tests"]) == sorted(ran)
    upload_id = int(done.stdout.split("as upload ")[1].split(":")[0])
    deadline = time.monotonic() + 60
    while True:
        status = httpx.get(
            f"{live_server.url}/api/v1/uploads/{upload_id}",
            headers={"Authorization": f"Bearer {project.upload_token}"},
        ).json()
        if status["status"] in ("done", "failed") or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert status["status"] == "done", status
    with engine.connect() as conn:
        labels = conn.execute(
            text("SELECT labels FROM run WHERE upload_id = :u"), {"u": upload_id}
        ).scalar_one()
    assert labels == {"shard": "1/3"}
    # The upload names the server's plan (not as a label: a new plan is no new matrix cell).
    plan_id = status["metadata"]["plan_id"]
    assert isinstance(plan_id, str)
    assert len(plan_id) == 12
    # A shard run leaves its record, never the cache its siblings plan from; folding the
    # records makes the cache (as a pipeline's last step would).
    assert not cache.exists()
    assert (tmp_path / ".laptime" / "shards" / "shard-1-of-3.json").exists()
    fold = subprocess.run(
        [str(python), "-m", "laptime_ci.cli", "shard-fold"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert fold.returncode == 0, fold.stderr
    assert cache.exists()

    # The server is gone and the fleet opted into the offline split: every shard plans from
    # the same cached durations (as CI machines restoring one cache would), then, without a
    # cache, by hash. Each test runs once. (Without the opt-in each runs everything:
    # tests/plugin/test_shard_agreement.py.)
    saved = cache.read_bytes()
    offline = {
        **env,
        "LAPTIME_URL": _stopped_server_url(),
        "LAPTIME_UPLOAD_RETRIES": "0",
        "LAPTIME_SHARD_CACHE": str(tmp_path / "shard-cache.json"),
        "LAPTIME_SHARD_FALLBACK": "cache",
    }
    for source, cached in (("cache", saved), ("hash", None)):
        everything: list[str] = []
        for index in (1, 2, 3):
            shard_cache = tmp_path / "shard-cache.json"
            shard_cache.unlink(missing_ok=True)
            if cached is not None:
                shard_cache.write_bytes(cached)
            done = run_pytest(
                python, tmp_path, "--laptime-upload", f"--laptime-shard={index}/3", env=offline
            )
            ran = _ran(log)
            everything += ran
            assert done.returncode == (1 if FAILING in ran else 0), done.stdout
            assert f"({source})" in done.stdout, done.stdout
            assert "laptime: warning: shard plan " in done.stdout  # names the fallback
            assert "laptime: upload failed" in done.stdout
        assert sorted(everything) == sorted(nodeids), source
