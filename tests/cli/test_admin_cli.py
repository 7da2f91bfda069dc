"""`laptime project create`, `token create`, `migrate`, `prune` as real subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg
from sqlalchemy import Engine, text

from tests.conftest import Database


def laptime(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from app.cli.main import main; main()", *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_project_and_token_on_database_url(database: Database, engine: Engine) -> None:
    env = {"DATABASE_URL": database.url}
    created = laptime("project", "create", "CLI Demo Project", env=env)
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip().splitlines()[-1]
    assert token.startswith("lt_upload_")
    assert " " not in token
    again = laptime("project", "create", "CLI Demo Project", env=env)
    assert again.returncode == 1
    assert "already exists" in again.stderr
    assert "Traceback" not in again.stderr
    read = laptime("token", "create", "--project", "cli-demo-project", "--scope", "read", env=env)
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip().splitlines()[-1].startswith("lt_read_")
    missing = laptime("token", "create", "--project", "nope", env=env)
    assert missing.returncode == 1
    assert "no project 'nope'" in missing.stderr
    with engine.connect() as conn:
        hashes = conn.execute(
            text(
                "SELECT t.scope FROM api_token t JOIN project p ON p.id = t.project_id "
                "WHERE p.slug = 'cli-demo-project' ORDER BY t.id"
            )
        ).all()
    assert [h[0] for h in hashes] == ["upload", "read"]


def test_embedded_instance_is_shared_and_stopped(tmp_path: Path) -> None:
    env = {"LAPTIME_HOME": str(tmp_path / "home")}
    env_clean = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env_full = {**env_clean, **env}
    migrated = subprocess.run(
        [sys.executable, "-c", "from app.cli.main import main; main()", "migrate"],
        env=env_full,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrated.returncode == 0, migrated.stderr
    created = subprocess.run(
        [sys.executable, "-c", "from app.cli.main import main; main()", "project", "create", "emb"],
        env=env_full,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    token = subprocess.run(
        [
            sys.executable,
            "-c",
            "from app.cli.main import main; main()",
            "token",
            "create",
            "--project",
            "emb",
        ],
        env=env_full,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # The second process found the project the first one created: the same instance.
    assert token.returncode == 0, token.stderr
    pgdata = tmp_path / "home" / "pgdata"
    assert (pgdata / "PG_VERSION").exists()
    # Each command stopped the server it started.
    assert not (pgdata / "postmaster.pid").exists()


def test_prune_drops_old_partitions(database: Database, engine: Engine) -> None:
    from ingest.merge import merge_reports
    from ingest.model import ParsedReport, results_frame
    from ingest.store import RunMetadata, store_run
    from tests.conftest import make_project

    project = make_project(engine)
    old = datetime.now(UTC) - timedelta(days=400)
    report = ParsedReport(
        format="junit",
        results=results_frame(
            {"nodeid": ["o.py::t"], "function": ["t"], "outcome": ["passed"], "duration_s": [1.0]}
        ),
    )
    with psycopg.connect(database.dsn) as conn:
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, 'x', 'done') "
            "RETURNING id",
            (project.id,),
        ).fetchone()[0]  # type: ignore[index]
        store_run(
            conn,
            project_id=project.id,
            upload_id=upload_id,
            meta=RunMetadata(job="old", started_at=old),
            merged=merge_reports([report]),
        )
        conn.commit()
    partition = f"test_result_{old:%Y%m%d}"
    dry = laptime("prune", "--older-than", "365d", "--dry-run", env={"DATABASE_URL": database.url})
    assert dry.returncode == 0, dry.stderr
    assert "would drop" in dry.stdout
    done = laptime("prune", "--older-than", "365d", env={"DATABASE_URL": database.url})
    assert done.returncode == 0, done.stderr
    with engine.connect() as conn:
        assert conn.execute(text("SELECT to_regclass(:n)"), {"n": partition}).scalar() is None
        assert (
            conn.execute(
                text("SELECT count(*) FROM run WHERE project_id = :p"), {"p": project.id}
            ).scalar()
            == 0
        )
