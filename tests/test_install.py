"""Install hygiene: `pip install -e .` works alone, the locks pin every
package an install brings, and the embedded PostgreSQL is an extra that says how to get it."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[1]
LOCKS = REPO / "requirements"
# Packages that only the build or pip itself bring: never pinned, never imported at run time.
TOOLING = {"pip", "setuptools", "wheel"}
OURS = {"laptime"}  # pip freeze lists an editable checkout without a remote as a pin


def lock(name: str) -> dict[str, str]:
    """requirements/NAME.lock as {canonical name: version}."""
    pins = {}
    for line in (LOCKS / f"{name}.lock").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            package, version = line.split("==")
            pins[canonicalize_name(package)] = version.strip()
    assert pins, name
    return pins


def run(*args: str | Path, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=240, **kw)  # type: ignore[call-overload, no-any-return]


def frozen(python: Path) -> dict[str, str]:
    out = run(python, "-m", "pip", "freeze", "--all", "--exclude-editable")
    assert out.returncode == 0, out.stderr
    pins = {}
    for line in out.stdout.splitlines():
        if line.startswith(("#", "-e")) or "==" not in line:
            continue  # pip's notes on editable checkouts
        package, version = line.split("==")
        if canonicalize_name(package) not in TOOLING | OURS:
            pins[canonicalize_name(package)] = version
    return pins


@pytest.fixture(scope="module")
def server_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding requirements/server.lock, then `pip install -e .` alone."""
    venv = tmp_path_factory.mktemp("install") / "venv"
    made = run(sys.executable, "-m", "venv", venv)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    pinned = run(python, "-m", "pip", "install", "-q", "-r", LOCKS / "server.lock")
    assert pinned.returncode == 0, pinned.stderr[-3000:]
    return python


@pytest.mark.slow
def test_pip_install_e_dot_alone_adds_nothing_the_lock_lacks(server_venv: Path) -> None:
    before = frozen(server_venv)
    assert before == lock("server")
    # Alone: no client first, no index beyond the ordinary one (laptime-ci is on none).
    alone = run(server_venv, "-m", "pip", "install", "-q", "-e", REPO)
    assert alone.returncode == 0, alone.stderr[-3000:]
    # Every package the install needs is pinned by the lock: nothing was added or moved.
    assert frozen(server_venv) == before
    names = {canonicalize_name(n) for n in before}
    assert not names & {"pgserver", "httpx", "psutil", "laptime-ci"}


@pytest.mark.slow
def test_the_installed_server_runs_and_names_the_embedded_extra(
    server_venv: Path, tmp_path: Path
) -> None:
    bin_dir = server_venv.parent
    imported = run(
        server_venv, "-c", "import app.factory, laptime_ci.labels; print(laptime_ci.__file__)"
    )
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == str(REPO / "client" / "laptime_ci" / "__init__.py")
    # No pgserver and no initdb/pg_ctl on PATH: a command that needs the database says how
    # to get the embedded one.
    env = {**os.environ, "PATH": str(bin_dir), "LAPTIME_HOME": str(tmp_path)}
    env.pop("DATABASE_URL", None)
    env.pop("LAPTIME_DATABASE_URL", None)
    migrated = run(bin_dir / "laptime", "migrate", env=env, cwd=tmp_path)
    if migrated.returncode == 0:
        # Only a working system PostgreSQL (not as root) may stand in for the extra.
        assert glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), migrated.stdout
        assert os.geteuid() != 0
    else:
        assert "Traceback" not in migrated.stderr
        assert "pip install 'laptime[embedded]'" in migrated.stderr


def test_the_locks_nest_with_the_same_versions() -> None:
    server, embedded, test = lock("server"), lock("embedded"), lock("test")
    assert set(server) < set(embedded) < set(test)
    assert all(test[n] == v for n, v in embedded.items())
    assert all(embedded[n] == v for n, v in server.items())
    assert "pgserver" in set(embedded) - set(server)


def _requirements(dist: str, extras: set[str]) -> list[Requirement]:
    reqs = [Requirement(r) for r in metadata.requires(dist) or []]
    return [r for r in reqs if r.marker is None or _wanted(r, extras)]


def _wanted(req: Requirement, extras: set[str]) -> bool:
    assert req.marker is not None
    return any(req.marker.evaluate({"extra": e}) for e in extras | {""})


def test_the_test_lock_pins_everything_the_test_extra_needs() -> None:
    """Walks pyproject's test and embedded requirements through the installed metadata."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project["optional-dependencies"]
    roots = [Requirement(r) for r in project["dependencies"] + optional["test"]]
    roots += [Requirement(r) for r in optional["embedded"]]
    pins = lock("test")
    seen: set[str] = set()
    todo = [(r, set(r.extras)) for r in roots if canonicalize_name(r.name) != "laptime"]
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name}, needed by laptime[test], is not in test.lock"
        assert req.specifier.contains(pins[name], prereleases=True), (req, pins[name])
        if name in seen:
            continue
        seen.add(name)
        todo += [(r, set(r.extras)) for r in _requirements(req.name, extras)]
    assert len(seen) > 60
    assert not set(pins) - seen - TOOLING, "the lock pins packages nothing needs"


def test_every_install_command_installs_from_a_lock() -> None:
    test_sh = (REPO / "scripts" / "test.sh").read_text()
    serve_sh = (REPO / "scripts" / "serve.sh").read_text()
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "-r requirements/test.lock" in test_sh
    assert "-r requirements/embedded.lock" in serve_sh
    assert "[embedded]" in serve_sh
    assert "-r requirements/server.lock" in dockerfile
    assert "COPY requirements requirements" in dockerfile
    assert "embedded" not in re.sub(r"#.*", "", dockerfile)
    assert (REPO / "scripts" / "lock.sh").is_file()
