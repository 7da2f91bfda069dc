"""The `security` migration re-keys runs and cells whose labels hold "%", "," or "=" (stored
under the old unescaped key) and leaves every other key as it was."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from alembic import command
from sqlalchemy import Engine, create_engine, make_url, text

from app.db.engine import alembic_config
from model.frames import labels_key
from tests.conftest import Database

OLD_STYLE = {"platform": "linux,arm64", "python": "3.11"}  # old key: "platform=linux,arm64,..."
PLAIN = {"os": "linux", "python": "3.12"}


@pytest.fixture
def scratch(database: Database, engine: Engine) -> Iterator[str]:
    """A fresh database on the test server, migrated to the revision before `security`."""
    name = f"mig_{uuid.uuid4().hex[:10]}"
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text(f"CREATE DATABASE {name}"))
    url = make_url(database.url).set(database=name).render_as_string(hide_password=False)
    command.upgrade(alembic_config(url), "0001")
    try:
        yield url
    finally:
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text(f"DROP DATABASE {name} WITH (FORCE)"))


def _old_key(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def test_upgrade_rekeys_only_labels_with_separators(scratch: str) -> None:
    eng = create_engine(scratch)
    try:
        with eng.begin() as conn:
            project = conn.execute(
                text("INSERT INTO project (slug, name) VALUES ('m', 'm') RETURNING id")
            ).scalar_one()
            for labels in (OLD_STYLE, PLAIN):
                cell = conn.execute(
                    text(
                        "INSERT INTO cell (project_id, job, labels_key) VALUES (:p, 'unit', :k) "
                        "RETURNING id"
                    ),
                    {"p": project, "k": _old_key(labels)},
                ).scalar_one()
                conn.execute(
                    text(
                        "INSERT INTO run (project_id, upload_id, cell_id, job, labels, "
                        "labels_key, started_at, day) VALUES (:p, 1, :c, 'unit', "
                        "CAST(:l AS jsonb), :k, now(), current_date)"
                    ),
                    {"p": project, "c": cell, "l": json.dumps(labels), "k": _old_key(labels)},
                )
        command.upgrade(alembic_config(scratch), "security")
        with eng.connect() as conn:
            runs = conn.execute(text("SELECT labels_key FROM run ORDER BY id")).scalars().all()
            cells = conn.execute(text("SELECT labels_key FROM cell ORDER BY id")).scalars().all()
            expires = conn.execute(
                text(
                    "SELECT count(*) FROM information_schema.columns "
                    "WHERE table_name = 'api_token' AND column_name = 'expires_at'"
                )
            ).scalar_one()
    finally:
        eng.dispose()
    assert runs == [labels_key(OLD_STYLE), labels_key(PLAIN)]
    assert cells == runs
    assert labels_key(OLD_STYLE) == "platform=linux%2Carm64,python=3.11"
    assert labels_key(PLAIN) == _old_key(PLAIN)  # keys without separators did not change
    assert expires == 1
