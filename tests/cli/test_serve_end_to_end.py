"""The README's path as a user runs it: serve on an embedded Postgres, create a project while it
runs, `laptime upload --wait` a report, read the rollup, stop the server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from tests.conftest import free_port
from tests.factories import junit_total_seconds, junit_xml
from tests.server.metrics_scrape import scrape

LAPTIME = [sys.executable, "-c", "from app.cli.main import main; main()"]


def test_serve_upload_and_read_back(tmp_path: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="laptime-e2e-") as home:
        unset = ("DATABASE_URL", "LAPTIME_TOKEN", "PROMETHEUS_MULTIPROC_DIR")
        env = {k: v for k, v in os.environ.items() if k not in unset}
        env.update({"LAPTIME_HOME": home, "LAPTIME_WORKER_POLL_S": "0.5"})
        port = free_port()
        server = subprocess.Popen(
            [*LAPTIME, "serve", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 90
            while True:
                try:
                    if httpx.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert server.poll() is None, server.stderr.read().decode()  # type: ignore[union-attr]
                assert time.monotonic() < deadline, "laptime serve did not come up"
                time.sleep(0.2)  # waiting for a process to listen, not timing

            created = subprocess.run(
                [*LAPTIME, "project", "create", "e2e"], env=env, capture_output=True, text=True
            )
            assert created.returncode == 0, created.stderr
            token = created.stdout.strip().splitlines()[-1]

            report = junit_xml(120, seed=11, failures=2)
            path = tmp_path / "junit.xml"
            path.write_bytes(report)
            upload_env = {**env, "LAPTIME_URL": f"http://127.0.0.1:{port}", "LAPTIME_TOKEN": token}
            sent = subprocess.run(
                [*LAPTIME, "upload", str(path), "--job", "unit", "--label", "os=linux", "--wait"],
                env=upload_env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert sent.returncode == 0, sent.stdout + sent.stderr
            assert "done" in (sent.stdout + sent.stderr)

            read = subprocess.run(
                [*LAPTIME, "token", "create", "--project", "e2e", "--scope", "read"],
                env=env,
                capture_output=True,
                text=True,
            )
            read_token = read.stdout.strip().splitlines()[-1]
            body = httpx.get(
                f"http://127.0.0.1:{port}/api/v1/projects/e2e/rollups",
                params={"by": "job"},
                headers={"Authorization": f"Bearer {read_token}"},
            ).json()
            (row,) = body["rows"]
            assert row["key"] == "unit"
            assert row["runs"] == 120
            assert row["failures"] == 2
            assert abs(row["total_s"] - junit_total_seconds(report)) < 1e-6

            # The ingest ran in serve's worker child; its counts reach the server's /metrics.
            metrics = scrape(f"http://127.0.0.1:{port}")
            assert metrics.get("laptime_uploads_accepted_total") == 1
            assert metrics.get("laptime_ingest_duration_seconds_count", outcome="done") == 1
            assert metrics.get("laptime_rows_stored_total") == 120
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)
        # The server stopped the embedded Postgres it started.
        assert not (Path(home) / "pgdata" / "postmaster.pid").exists()
