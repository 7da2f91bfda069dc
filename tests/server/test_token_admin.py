"""Tokens: create with expiry, list without secrets, revoke by id; revoked or expired tokens
answer 401 at once. Through the admin API, the CLI, and the commands the UI shows."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import lxml.html  # type: ignore[import-untyped]
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from app.cli.main import cli
from app.db.projects import MAX_PROJECT_NAME, create_project, create_token, get_project
from app.project_records import ProjectError
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.factories import junit_xml


def _api(server: LiveServer, project: ProjectFixture, path: str = "/tokens") -> str:
    return f"{server.url}/api/v1/projects/{project.slug}{path}"


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_admin_api_creates_lists_and_revokes(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    admin = _bearer(project.admin_token)
    created = httpx.post(
        _api(live_server, project), json={"scope": "read", "expires_in_days": 90}, headers=admin
    )
    assert created.status_code == 201, created.text
    new = created.json()
    assert new["token"].startswith("lt_read_")
    expires = datetime.fromisoformat(new["expires_at"])
    assert timedelta(days=89) < expires - datetime.now(UTC) <= timedelta(days=90)
    jobs = _api(live_server, project, "/jobs")
    assert httpx.get(jobs, headers=_bearer(new["token"])).status_code == 200

    listed = httpx.get(_api(live_server, project), headers=admin)
    assert listed.status_code == 200
    tokens = listed.json()["tokens"]
    assert [t["scope"] for t in tokens] == ["read", "admin", "read", "upload"]
    # No secret in the listing: only the first characters, which say the scope.
    for secret in (new["token"], project.read_token, project.admin_token, project.upload_token):
        assert secret not in listed.text
    assert tokens[0]["prefix"] == new["token"][:12]
    assert all(t["active"] for t in tokens)

    revoked = httpx.delete(_api(live_server, project, f"/tokens/{new['id']}"), headers=admin)
    assert revoked.status_code == 200
    assert httpx.get(jobs, headers=_bearer(new["token"])).status_code == 401
    again = httpx.delete(_api(live_server, project, f"/tokens/{new['id']}"), headers=admin)
    assert again.status_code == 404
    state = httpx.get(_api(live_server, project), headers=admin).json()["tokens"][0]
    assert state["revoked_at"] is not None
    assert state["active"] is False


@pytest.mark.parametrize("scope", ["read", "upload"])
def test_token_admin_needs_an_admin_token(
    live_server: LiveServer, project: ProjectFixture, scope: str
) -> None:
    token = project.read_token if scope == "read" else project.upload_token
    response = httpx.get(_api(live_server, project), headers=_bearer(token))
    assert response.status_code == 403


def test_tokens_of_another_project_cannot_be_revoked(
    live_server: LiveServer, engine: Engine
) -> None:
    mine, theirs = make_project(engine), make_project(engine)
    listed = httpx.get(_api(live_server, theirs), headers=_bearer(theirs.admin_token)).json()
    their_id = listed["tokens"][0]["id"]
    response = httpx.delete(
        _api(live_server, mine, f"/tokens/{their_id}"), headers=_bearer(mine.admin_token)
    )
    assert response.status_code == 404


def test_expired_token_answers_401(live_server: LiveServer, engine: Engine) -> None:
    fixture = make_project(engine)
    with engine.begin() as conn:
        project = get_project(conn, fixture.slug)
        assert project is not None
        past = datetime.now(UTC) - timedelta(seconds=1)
        expired = create_token(conn, project, "read", expires_at=past)
    response = httpx.get(_api(live_server, fixture, "/jobs"), headers=_bearer(expired))
    assert response.status_code == 401
    assert "expired" in response.json()["detail"]


@pytest.fixture
def cli_env(database: Database, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    """A CliRunner whose commands use the test database."""
    monkeypatch.setenv("DATABASE_URL", database.url)
    return CliRunner()


def test_cli_token_create_list_revoke(
    cli_env: CliRunner, live_server: LiveServer, project: ProjectFixture
) -> None:
    created = cli_env.invoke(
        cli, ["token", "create", "--project", project.slug, "--scope", "read", "--expires", "90d"]
    )
    assert created.exit_code == 0, created.output
    secret = created.output.strip().splitlines()[-1]
    assert secret.startswith("lt_read_")
    assert "expires" in created.output

    listed = cli_env.invoke(cli, ["token", "list", "--project", project.slug])
    assert listed.exit_code == 0, listed.output
    assert secret not in listed.output
    assert project.read_token not in listed.output
    row = next(line for line in listed.output.splitlines() if secret[:12] in line)
    token_id = int(row.split()[0])
    assert row.split()[-1] == "active"

    revoked = cli_env.invoke(cli, ["token", "revoke", "--project", project.slug, str(token_id)])
    assert revoked.exit_code == 0, revoked.output
    jobs = _api(live_server, project, "/jobs")
    assert httpx.get(jobs, headers=_bearer(secret)).status_code == 401
    listed = cli_env.invoke(cli, ["token", "list", "--project", project.slug])
    assert re.search(rf"^\s*{token_id} .* revoked$", listed.output, re.MULTILINE)
    twice = cli_env.invoke(cli, ["token", "revoke", "--project", project.slug, str(token_id)])
    assert twice.exit_code == 1
    assert "no active token" in twice.output


def test_cli_refuses_a_bad_expiry(cli_env: CliRunner, project: ProjectFixture) -> None:
    result = cli_env.invoke(cli, ["token", "create", "--project", project.slug, "--expires", "x"])
    assert result.exit_code == 2
    assert "like 90d" in result.output


def test_project_names_are_bounded(engine: Engine, cli_env: CliRunner) -> None:
    with engine.begin() as conn, pytest.raises(ProjectError, match="1 to 100"):
        create_project(conn, "x" * (MAX_PROJECT_NAME + 1))
    with engine.begin() as conn, pytest.raises(ProjectError):
        create_project(conn, "bad\x00name")
    result = cli_env.invoke(cli, ["project", "create", "y" * 500])
    assert result.exit_code == 1
    assert "printable characters" in result.output


def _commands(html: str) -> list[str]:
    """The `laptime ...` commands a page shows."""
    doc = lxml.html.fromstring(html)
    return [
        c.text_content() for c in doc.cssselect("code") if c.text_content().startswith("laptime ")
    ]


def test_commands_shown_in_the_ui_work(
    cli_env: CliRunner,
    live_server: LiveServer,
    engine: Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fresh = make_project(engine, public=True)  # no uploads: the overview shows how to send one
    shown = _commands(httpx.get(f"{live_server.url}/signin").text)
    shown += _commands(httpx.get(f"{live_server.url}/p/{fresh.slug}").text)
    assert len(shown) == 2
    report = tmp_path / "REPORT.xml"
    report.write_bytes(junit_xml(3))
    monkeypatch.setenv("LAPTIME_URL", live_server.url)
    monkeypatch.setenv("LAPTIME_TOKEN", fresh.upload_token)
    monkeypatch.chdir(tmp_path)
    for command in shown:
        args = command.replace("PROJECT", fresh.slug).replace("JOB", "unit").split()[1:]
        result = cli_env.invoke(cli, args)
        assert result.exit_code == 0, (command, result.output)
