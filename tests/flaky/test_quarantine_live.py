"""The quarantine end to end on a live server with the real client: a quarantined failing
pytest test leaves the session green, is reported as a quarantined failure and stays in its
history; the admin API, the CLI and the Flaky page's button change the list; and `go test`
runs the exported gating and quarantine selections as Go's own `-run` syntax."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import lxml.html  # type: ignore[import-untyped]
from click.testing import CliRunner
from sqlalchemy import Engine

from app.cli.main import cli
from laptime_ci.cli import main as client_main
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.pages.conftest import session_cookies
from tests.runners.test_real_runners import _go_project, _go_ran, _run, go_env
from tests.server.conftest import wait_for
from tests.uploads import upload_all

__all__ = ["go_env"]  # the fixture, used by the Go test below
ROOT = Path(__file__).resolve().parents[2]
BROKEN = "test_q.py::test_broken"
SUITE = (
    "def test_ok():\n    assert True\n\n\n"
    "def test_broken():\n    assert 1 + 1 == 3, 'a flaky failure'\n"
)


def api(server: LiveServer, project: ProjectFixture, path: str) -> str:
    return f"{server.url}/api/v1/projects/{project.slug}/{path}"


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def quarantine_list(server: LiveServer, project: ProjectFixture, token: str) -> dict[str, Any]:
    response = httpx.get(api(server, project, "quarantine"), headers=bearer(token), timeout=60)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def run_suite(folder: Path, server: LiveServer, project: ProjectFixture, *args: str) -> Any:
    """A real pytest session of the suite with the plugin, uploading to the live server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAPTIME_", "PYTEST_"))}
    env.update(
        PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'client'}",
        LAPTIME_URL=server.url,
        LAPTIME_PROJECT=project.slug,
        LAPTIME_TOKEN=project.upload_token,
        LAPTIME_JOB="unit",
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", *args],
        cwd=folder, env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def test_quarantined_pytest_failure_keeps_the_job_green_and_its_history(
    live_server: LiveServer, engine: Engine, database: Database, tmp_path: Path
) -> None:
    project = make_project(engine)
    add = httpx.post(
        api(live_server, project, "quarantine"),
        json={"nodeid": BROKEN, "reason": "flaky on CI"},
        headers=bearer(project.admin_token),
        timeout=60,
    )
    assert add.status_code == 200, add.text
    assert add.json()["state"] == "active"
    refused = httpx.post(
        api(live_server, project, "quarantine"),
        json={"nodeid": "x::y"},
        headers=bearer(project.read_token),
        timeout=60,
    )
    assert refused.status_code == 403
    # The CI's upload token reads the list the plugin applies.
    assert quarantine_list(live_server, project, project.upload_token)["active"] == [BROKEN]

    (tmp_path / "test_q.py").write_text(SUITE)
    done = run_suite(
        tmp_path, live_server, project, "--laptime-quarantine", "--laptime-upload",
        "--laptime-report=r.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "1 passed, 1 xfailed" in done.stdout
    assert f"laptime: quarantined failure (not failing): {BROKEN}" in done.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    broken = next(t for t in report["tests"] if t["nodeid"] == BROKEN)
    assert broken["outcome"] == "failed"
    assert broken["message"].startswith("quarantined failure: ")
    assert "a flaky failure" in broken["message"]

    # The failure is in the test's history, and counted as a quarantined failure.
    def counted() -> bool:
        entries = quarantine_list(live_server, project, project.read_token)["entries"]
        return bool(entries[0]["quarantined_failures"] == 1)

    wait_for(counted, 60, "the upload stored and its failure counted as quarantined")
    rows = httpx.get(
        api(live_server, project, "rollups"),
        params={"by": "test"},
        headers=bearer(project.read_token),
        timeout=60,
    ).json()["rows"]
    assert {r["key"]: r["failures"] for r in rows} == {BROKEN: 1, "test_q.py::test_ok": 0}

    # Without the quarantine the same failure fails the session.
    plain = run_suite(tmp_path, live_server, project)
    assert plain.returncode == 1

    # The CLI lists, removes (the entry stays, ended) and adds again.
    env = {"DATABASE_URL": database.url}
    runner = CliRunner()
    listed = runner.invoke(
        cli, ["quarantine", "list", "--project", project.slug, "--json"], env=env
    )
    assert listed.exit_code == 0, listed.output
    assert [(e["nodeid"], e["quarantined_failures"]) for e in json.loads(listed.output)] == [
        (BROKEN, 1)
    ]
    removed = runner.invoke(
        cli, ["quarantine", "remove", "--project", project.slug, BROKEN], env=env
    )
    assert removed.exit_code == 0, removed.output
    after = quarantine_list(live_server, project, project.read_token)
    assert after["active"] == []
    assert [e["state"] for e in after["entries"]] == ["removed"]
    again = runner.invoke(
        cli,
        ["quarantine", "add", "--project", project.slug, "--release-after", "3", BROKEN],
        env=env,
    )
    assert again.exit_code == 0, again.output
    assert quarantine_list(live_server, project, project.read_token)["active"] == [BROKEN]
    gone = runner.invoke(cli, ["quarantine", "remove", "--project", project.slug, "x::y"], env=env)
    assert gone.exit_code == 1


def flaky_report() -> bytes:
    tests = [
        {"nodeid": "tests/test_w.py::test_wobbly", "outcome": "passed", "duration_s": 2.0,
         "attempts": 2, "flaky": True},
        {"nodeid": "tests/test_w.py::test_steady", "outcome": "passed", "duration_s": 1.0},
    ]  # fmt: skip
    return json.dumps({"format": "laptime-json", "version": 1, "tests": tests}).encode()


def test_flaky_page_button_quarantines_for_a_signed_in_admin_only(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    upload_all(live_server, project.upload_token, [("r.json", flaky_report(), {"job": "unit"})])
    page = f"{live_server.url}/p/{project.slug}/flaky"
    reader = session_cookies(live_server.url, project.read_token)
    shown = lxml.html.fromstring(httpx.get(page, cookies=reader, timeout=60).text)
    assert shown.xpath("//tr[@data-nodeid='tests/test_w.py::test_wobbly']")
    assert not shown.xpath("//form[@class='quarantine']")  # a reader sees no button
    admin = session_cookies(live_server.url, project.admin_token)
    with httpx.Client(base_url=live_server.url, cookies=admin, timeout=60) as browser:
        doc = lxml.html.fromstring(browser.get(f"/p/{project.slug}/flaky").text)
        (form,) = doc.xpath("//tr[@data-nodeid='tests/test_w.py::test_wobbly']//form")
        fields = {i.get("name"): i.get("value") for i in form.xpath(".//input")}
        assert fields["action"] == "add"
        forged = browser.post(form.get("action"), data={**fields, "csrf": "forged"})
        assert forged.status_code == 403
        pressed = browser.post(form.get("action"), data=fields)
        assert pressed.status_code == 303, pressed.text
        assert quarantine_list(live_server, project, project.read_token)["active"] == [
            "tests/test_w.py::test_wobbly"
        ]
        doc = lxml.html.fromstring(browser.get(f"/p/{project.slug}/flaky").text)
        (row,) = doc.xpath("//tr[@data-nodeid='tests/test_w.py::test_wobbly']")
        assert "quarantined" in row.text_content()
        assert row.xpath(".//input[@name='action']/@value") == ["remove"]
    # A reader's session posting the form is refused.
    with httpx.Client(base_url=live_server.url, cookies=reader, timeout=60) as browser:
        doc = lxml.html.fromstring(browser.get(f"/p/{project.slug}/flaky").text)
        csrf = doc.xpath("//input[@name='csrf']/@value")[0]
        refused = browser.post(
            f"/p/{project.slug}/flaky/quarantine",
            data={"csrf": csrf, "nodeid": "tests/test_w.py::test_steady", "action": "add"},
        )
        assert refused.status_code == 403


def test_go_test_runs_the_exported_quarantine(
    live_server: LiveServer, engine: Engine, tmp_path: Path, go_env: dict[str, str]
) -> None:
    history = _go_project(tmp_path)
    quarantined = "example.com/shop/cart::TestTotal"
    source = tmp_path / "cart" / "cart_test.go"
    text = source.read_text()
    assert "func TestTotal(t *testing.T) {\n}" in text
    source.write_text(
        text.replace(
            "func TestTotal(t *testing.T) {\n}",
            'func TestTotal(t *testing.T) {\n\tt.Fatal("flaky")\n}',
        )
    )
    project = make_project(engine)
    upload_all(live_server, project.upload_token, [("go-junit.xml", history, {"job": "go"})])
    add = httpx.post(
        api(live_server, project, "quarantine"),
        json={"nodeid": quarantined},
        headers=bearer(project.admin_token),
        timeout=60,
    )
    assert add.status_code == 200, add.text
    server = ["--url", live_server.url, "--project", project.slug, "--token", project.upload_token]
    ran: dict[str, Counter[str]] = {}
    codes: dict[str, list[int]] = {}
    for part in ("gating", "quarantine"):
        out = tmp_path / f"{part}.sh"
        args = ["quarantine", "export", "--runner", "go", "--part", part, "--output", str(out)]
        assert client_main([*args, *server]) == 0
        ran[part], codes[part] = Counter(), []
        for command in out.read_text().strip().split(" && "):
            argv = shlex.split(command)
            assert argv[:2] == ["go", "test"]
            done = _run([*argv, "-json", "-count=1"], tmp_path, go_env)
            codes[part].append(done.returncode)
            ran[part].update(_go_ran(done.stdout))
    everything = {
        line.split('name="')[1].split('"')[0] for line in history.decode().split("<testcase")[1:]
    }
    assert quarantined not in ran["gating"]
    assert set(ran["gating"].values()) == {1}
    assert {n.rsplit("::", 1)[1] for n in ran["gating"]} == everything - {"TestTotal"}
    assert set(codes["gating"]) == {0}  # the gating run passes: the failure is quarantined
    assert list(ran["quarantine"]) == [quarantined]
    assert codes["quarantine"] == [1]  # the quarantine run fails, and must not fail the job


def test_flaky_reset_restarts_a_tests_statistics(
    live_server: LiveServer, engine: Engine, database: Database
) -> None:
    project = make_project(engine)
    upload_all(live_server, project.upload_token, [("r.json", flaky_report(), {"job": "unit"})])
    flaky = api(live_server, project, "flaky")
    listed = httpx.get(flaky, headers=bearer(project.read_token), timeout=60).json()
    assert [t["nodeid"] for t in listed["tests"]] == ["tests/test_w.py::test_wobbly"]
    refused = httpx.post(
        api(live_server, project, "flaky/reset"),
        json={"nodeid": "tests/test_w.py::test_wobbly"},
        headers=bearer(project.read_token),
        timeout=60,
    )
    assert refused.status_code == 403
    done = CliRunner().invoke(
        cli,
        ["flaky-reset", "--project", project.slug, "tests/test_w.py::test_wobbly"],
        env={"DATABASE_URL": database.url},
    )
    assert done.exit_code == 0, done.output
    after = httpx.get(flaky, headers=bearer(project.read_token), timeout=60).json()
    assert after["tests"] == []
    assert after["total"]["machine_s"] == 0.0
