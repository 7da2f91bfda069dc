"""Webhooks and the weekly digest through the real interfaces: REST on a live server, the
`laptime webhook` and `laptime digest` commands, and the digest sent once per week."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta

import httpx
from click.testing import CliRunner
from sqlalchemy import Engine

from analysis.digest.weekly import last_complete_week
from app.cli.main import cli
from app.services.digest import enqueue_weekly_digests
from app.services.webhooks import deliver_due
from notify.retry import RetryPolicy
from notify.signing import verify
from tests.conftest import Database, LiveServer, ProjectFixture
from tests.factories import junit_xml
from tests.server.webhook_receiver import receiver
from tests.uploads import upload_all


def test_admins_register_list_and_remove_webhooks_by_rest_and_cli(
    live_server: LiveServer, project: ProjectFixture, database: Database
) -> None:
    url = f"{live_server.url}/api/v1/projects/{project.slug}/webhooks"
    admin = {"Authorization": f"Bearer {project.admin_token}"}
    read = {"Authorization": f"Bearer {project.read_token}"}
    body = {"url": "https://hooks.example/laptime", "events": ["change.detected"]}
    assert httpx.post(url, json=body, headers=read).status_code == 403
    created = httpx.post(url, json=body, headers=admin)
    assert created.status_code == 201, created.text
    hook = created.json()
    assert hook["events"] == ["change.detected"]
    assert hook["format"] == "json"
    assert len(hook["secret"]) >= 32
    for bad in ("file:///etc/passwd", "gopher://h/_x", "http://u:p@h/", "http://h:0/"):
        refused = httpx.post(url, json={"url": bad}, headers=admin)
        assert refused.status_code == 422, bad
    # The schema says which URLs pass; the service checks again (the CLI, other callers).
    assert refused.json()["detail"] == "port 0 is no port"
    listed = httpx.get(url, headers=admin).json()["webhooks"]
    assert [w["id"] for w in listed] == [hook["id"]]
    assert "secret" not in listed[0]
    assert hook["secret"].startswith(listed[0]["secret_prefix"])
    assert httpx.get(url, headers=read).status_code == 403
    deliveries = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/webhook-deliveries", headers=admin
    )
    assert deliveries.status_code == 200
    assert deliveries.json() == {"deliveries": []}

    runner = CliRunner()
    # hooks.example resolves nowhere offline: allowed, the name is not looked up.
    env = {"DATABASE_URL": database.url, "LAPTIME_WEBHOOK_ALLOW_PRIVATE": "true"}
    added = runner.invoke(
        cli,
        ["webhook", "add", "--project", project.slug, "--format", "slack", "https://h.example/s"],
        env=env,
    )
    assert added.exit_code == 0, added.output
    secret = added.output.strip().splitlines()[-1]
    cli_id = int(re.match(r"webhook (\d+):", added.output).group(1))  # type: ignore[union-attr]
    listed_cli = runner.invoke(cli, ["webhook", "list", "--project", project.slug], env=env)
    assert (
        f"{cli_id}\thttps://h.example/s\tslack\tchange.detected,digest.weekly" in listed_cli.output
    )
    assert secret not in listed_cli.output
    bad = runner.invoke(cli, ["webhook", "add", "--project", project.slug, "gopher://x/"], env=env)
    assert bad.exit_code == 1
    assert "http and https" in bad.output
    gone = runner.invoke(
        cli, ["webhook", "remove", "--project", project.slug, str(cli_id)], env=env
    )
    assert gone.exit_code == 0, gone.output
    again = runner.invoke(
        cli, ["webhook", "remove", "--project", project.slug, str(cli_id)], env=env
    )
    assert again.exit_code == 1
    removed = httpx.delete(f"{url}/{hook['id']}", headers=admin)
    assert removed.json() == {"removed": hook["id"]}
    missing = httpx.delete(f"{url}/{hook['id']}", headers=admin)
    assert missing.status_code == 404
    assert missing.json()["code"] == "webhook-not-found"


def test_the_weekly_digest_by_rest_cli_and_webhook_once_per_week(
    live_server: LiveServer, project: ProjectFixture, database: Database, engine: Engine
) -> None:
    week = last_complete_week(datetime.now(UTC).date())
    before = week - timedelta(days=7)
    base = junit_xml(6, seed=7)
    slower = re.sub(
        rb'name="test_case_1" time="([0-9.]+)"',
        lambda m: b'name="test_case_1" time="%.6f"' % (float(m.group(1)) + 4.0),
        base,
    )

    def at(day: date, hour: int) -> str:
        return datetime(day.year, day.month, day.day, hour, tzinfo=UTC).isoformat()

    uploads = [
        (
            "r.xml",
            base,
            {
                "started_at": at(before + timedelta(days=1), h),
                "backfill": "true",
                "pipeline": f"b{h}",
            },
        )
        for h in (9, 10)
    ] + [
        (
            "r.xml",
            slower,
            {
                "started_at": at(week + timedelta(days=2), h),
                "backfill": "true",
                "pipeline": f"w{h}",
            },
        )
        for h in (9, 10, 11)
    ]
    upload_all(live_server, project.upload_token, uploads)
    api = f"{live_server.url}/api/v1/projects/{project.slug}/digest"
    read = {"Authorization": f"Bearer {project.read_token}"}
    answer = httpx.get(api, headers=read).json()
    assert answer["week"] == week.isoformat()
    [grown] = answer["growing_tests"]
    assert grown["name"].endswith("test_case_1")
    assert abs(grown["delta_s"] - 4.0) < 1e-6
    assert grown["runs"] == 3
    assert answer["growing_files"][0]["name"] in grown["name"]
    total = sum(float(t) for t in re.findall(rb'time="([0-9.]+)"', base))
    assert abs(answer["previous_ci_time_s"] - 2 * total) < 1e-6
    assert abs(answer["ci_time_s"] - 3 * (total + 4.0)) < 1e-6
    # The same digest for any day of that week.
    later = httpx.get(api, params={"week": (week + timedelta(days=6)).isoformat()}, headers=read)
    assert later.json() == answer

    printed = CliRunner().invoke(
        cli,
        ["digest", "--project", project.slug, "--week", week.isoformat()],
        env={"DATABASE_URL": database.url},
    )
    assert printed.exit_code == 0, printed.output
    assert printed.output == answer["text"]
    assert "+4.00s |" in printed.output
    as_json = CliRunner().invoke(
        cli, ["digest", "--project", project.slug, "--json"], env={"DATABASE_URL": database.url}
    )
    assert json.loads(as_json.output) == answer

    hooks = f"{live_server.url}/api/v1/projects/{project.slug}/webhooks"
    admin = {"Authorization": f"Bearer {project.admin_token}"}
    with receiver(200) as rx:
        made = httpx.post(
            hooks, json={"url": rx.url, "events": ["digest.weekly"]}, headers=admin
        ).json()
        enqueue_weekly_digests(engine)
        enqueue_weekly_digests(engine)  # the same week again: nothing more
        while deliver_due(
            engine, RetryPolicy(first_delay_s=0.0, timeout_s=2.0, allow_private=True)
        ):
            pass
        mine = [r for r in rx.received if json.loads(r.body)["project"] == project.slug]
    assert len(mine) == 1
    assert verify(made["secret"], mine[0].body, mine[0].headers["X-Laptime-Signature"])
    message = json.loads(mine[0].body)
    assert message["event"] == "digest.weekly"
    assert message["data"] == answer
    deliveries = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/webhook-deliveries",
        params={"state": "delivered"},
        headers=admin,
    ).json()["deliveries"]
    assert [(d["event"], d["attempts"], d["last_status"]) for d in deliveries] == [
        ("digest.weekly", 1, 200)
    ]
    listed = CliRunner().invoke(
        cli,
        ["webhook", "deliveries", "--project", project.slug, "--state", "delivered"],
        env={"DATABASE_URL": database.url},
    )
    assert listed.exit_code == 0, listed.output
    assert listed.output == (
        f"{deliveries[0]['id']}\twebhook {made['id']}\tdigest.weekly\tdelivered\tattempts 1\t"
        "HTTP 200\n"
    )
