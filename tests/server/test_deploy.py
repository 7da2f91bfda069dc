"""docker-compose.yml, its Prometheus configuration and the Dockerfile agree with the code.

No Docker engine runs here, so the compose healthcheck's own command is run against a real
server: it must pass when /readyz is 200 and fail when it is 503.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import LiveServer
from tests.server.conftest import serve_app

REPO = Path(__file__).resolve().parents[2]


def _compose() -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return doc


def _web_healthcheck() -> list[str]:
    test: list[str] = _compose()["services"]["web"]["healthcheck"]["test"]
    return test


def _run_healthcheck(base_url: str) -> int:
    """The compose healthcheck's command, pointed at `base_url` instead of the container's."""
    kind, *argv = _web_healthcheck()
    assert kind == "CMD"
    argv = [part.replace("http://127.0.0.1:8000", base_url) for part in argv]
    assert argv[0] == "python"
    return subprocess.run([sys.executable, *argv[1:]], capture_output=True, timeout=60).returncode


def test_the_web_healthcheck_probes_readyz_with_a_tool_the_image_has() -> None:
    test = _web_healthcheck()
    assert any("/readyz" in part for part in test)
    # The image is a python one (no curl or wget in -slim): the probe runs python.
    assert re.search(r"^FROM python:", (REPO / "Dockerfile").read_text(), re.MULTILINE)
    assert test[:2] == ["CMD", "python"]
    web = _compose()["services"]["web"]
    port = web["command"][web["command"].index("--port") + 1]
    assert f"127.0.0.1:{port}/readyz" in " ".join(test)


def test_the_healthcheck_passes_when_ready_and_fails_when_not(
    live_server: LiveServer, private_db: str
) -> None:
    # live_server has a worker beating; a server on a database no worker serves is not ready.
    assert _run_healthcheck(live_server.url) == 0
    with serve_app(private_db) as not_ready:
        assert _run_healthcheck(not_ready) != 0


def test_prometheus_scrapes_the_web_metrics_and_every_worker_port() -> None:
    services = _compose()["services"]
    prometheus = services["prometheus"]
    assert prometheus["profiles"] == ["metrics"]
    mounted = prometheus["volumes"][0].split(":")[0]
    config = yaml.safe_load((REPO / mounted).read_text())
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    web = jobs["laptime-web"]
    assert web["metrics_path"] == "/metrics"
    assert web["static_configs"][0]["targets"] == ["web:8000"]
    worker_port = int(services["worker"]["environment"]["LAPTIME_WORKER_METRICS_PORT"])
    (dns,) = jobs["laptime-worker"]["dns_sd_configs"]
    assert dns["names"] == ["worker"]
    assert dns["port"] == worker_port
    assert str(worker_port) in services["worker"]["expose"]


def test_the_image_copies_every_package_it_installs() -> None:
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    find = pyproject["tool"]["setuptools"]["packages"]["find"]
    # Each package's top folder as the image must copy it: laptime_ci lives under client/.
    packages = set()
    for name in (p.rstrip("*") for p in find["include"]):
        where = next(w for w in find.get("where", ["."]) if (REPO / w / name).is_dir())
        packages.add(name if where == "." else where)
    copied = set(re.findall(r"^COPY (\S+) ", (REPO / "Dockerfile").read_text(), re.MULTILINE))
    assert packages - copied == set()
    assert "client" in packages
