"""The token, webhook and digest contracts, byte for byte: their REST answers, the JSON and
Slack bodies a receiver gets ("change.detected", "digest.weekly"), the digest's markdown and
the `laptime token`, `webhook` and `digest` outputs, compared with tests/data/golden/.

Ids the database's sequences give, secrets drawn at random, the clock and the receiver's port
are replaced by placeholders; everything else must be equal."""

from __future__ import annotations

import json
import re
from datetime import UTC, date, datetime, timedelta

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import Engine

from app.cli.main import cli
from app.services.change_notices import enqueue_new_changes
from app.services.digest import enqueue_weekly_digests
from app.services.webhooks import deliver_due
from notify.retry import RetryPolicy
from tests.changes_history import upload_step_history
from tests.conftest import Database, LiveServer, ProjectFixture, make_project
from tests.factories import junit_xml
from tests.server.test_golden_answers import check, normalise
from tests.server.webhook_receiver import receiver
from tests.uploads import upload_all

# Numbered by sequences, under names the shared normaliser does not know.
_NUMBERED = re.compile(rb'"(id|change_id|webhook_id|revoked|removed)": ?(\d+)')
# A float with more digits than a sum of the same seconds in another row order keeps.
_LONG_FLOAT = re.compile(rb"(?<![\w.])-?\d+\.\d{9,}(?:e-?\d+)?")
# A datetime as str() writes it (the CLI's `--json` of webhooks and deliveries).
_STR_TIME = re.compile(rb'"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d)?"')
# Digest weeks: fixed, far from today, so the bytes do not depend on the day the test runs.
WEEK = date(2026, 1, 12)
# The receiver listens on loopback, which deliveries refuse unless allowed.
NOW = RetryPolicy(max_attempts=3, first_delay_s=0.0, timeout_s=2.0, allow_private=True)
SECRET = "golden-secret-0123456789"


def stable(body: bytes, volatile: dict[str, str]) -> bytes:
    """`normalise` plus the ids and time forms only these answers carry."""
    seen: dict[tuple[bytes, bytes], int] = {}

    def ordinal(match: re.Match[bytes]) -> bytes:
        name, value = match.group(1), match.group(2)
        number = seen.setdefault((name, value), sum(1 for n, _ in seen if n == name) + 1)
        return b'"%s":"<%s%d>"' % (name, name, number)

    body = _STR_TIME.sub(b'"<time>"', _NUMBERED.sub(ordinal, body))
    for value, name in volatile.items():
        body = body.replace(value.encode(), name.encode())
    return normalise(body, {})


def sums(body: bytes) -> bytes:
    """Floats to 12 significant digits: the digest adds seconds in the database's row order,
    which two equal histories need not share (the last bits of a sum differ)."""
    return _LONG_FLOAT.sub(lambda m: repr(float(f"{float(m.group(0)):.12g}")).encode(), body)


def _record(name: str, response: httpx.Response, volatile: dict[str, str]) -> None:
    check(f"api/{name}", f"{response.status_code}\n".encode() + stable(response.content, volatile))


def _prefixes(project: ProjectFixture) -> dict[str, str]:
    tokens = {"upload": project.upload_token, "read": project.read_token}
    tokens["admin"] = project.admin_token
    return {value[:12]: f"<{scope}-prefix>" for scope, value in tokens.items()} | {
        project.slug: "<slug>"
    }


def _cli(database: Database, *args: str) -> str:
    result = CliRunner().invoke(cli, list(args), env={"DATABASE_URL": database.url})
    assert result.exit_code == 0, result.output
    return result.output


# A listed token's id and prefix, within one JSON object of the answer.
_TOKEN_PREFIX = re.compile(rb'("id":(\d+),[^{}]*?"prefix":")([^"]*)(")')


def _label(labels: dict[int, tuple[str, str]], token_id: int, prefix: str) -> str:
    """The label of token `token_id`, whose listed prefix must be the one it was issued with."""
    expected, label = labels[token_id]
    assert prefix == expected, (token_id, prefix, expected)
    return label


def _labelled(response: httpx.Response, labels: dict[int, tuple[str, str]]) -> httpx.Response:
    """The answer with each listed token's prefix replaced by its label, found by the token's
    id: a 12-character prefix shows only 2 random characters of an upload token, so two
    tokens of one scope can share it (1 in 4,096) and a replacement by value would mix them."""
    body = _TOKEN_PREFIX.sub(
        lambda m: (
            m.group(1) + _label(labels, int(m.group(2)), m.group(3).decode()).encode() + m.group(4)
        ),
        response.content,
    )
    return httpx.Response(response.status_code, content=body)


def test_token_answers_are_the_stored_bytes(
    live_server: LiveServer, engine: Engine, database: Database
) -> None:
    project = make_project(engine)
    volatile = _prefixes(project)
    url = f"{live_server.url}/api/v1/projects/{project.slug}/tokens"
    admin = {"Authorization": f"Bearer {project.admin_token}"}
    listed = httpx.get(url, headers=admin)
    # The fixture's three tokens differ in scope, so their prefixes tell them apart.
    fixture = {v[:12] for v in (project.upload_token, project.read_token, project.admin_token)}
    labels = {t["id"]: (t["prefix"], volatile[t["prefix"]]) for t in listed.json()["tokens"]}
    assert {prefix for prefix, _ in labels.values()} == fixture
    _record("tokens.json", _labelled(listed, labels), volatile)
    created = httpx.post(url, json={"scope": "read", "expires_in_days": 30}, headers=admin)
    secret = created.json()["token"]
    volatile |= {secret: "<token>"}
    labels[created.json()["id"]] = (secret[:12], "<new-prefix>")
    _record("tokens-create.json", _labelled(created, labels), volatile)
    forever = httpx.post(url, json={"scope": "upload"}, headers=admin)
    labels[forever.json()["id"]] = (forever.json()["token"][:12], "<forever-prefix>")
    revoked = httpx.delete(f"{url}/{created.json()['id']}", headers=admin)
    _record("tokens-revoke.json", _labelled(revoked, labels), volatile)
    _record("tokens-after.json", _labelled(httpx.get(url, headers=admin), labels), volatile)

    listed = _cli(database, "token", "list", "--project", project.slug)
    # Each row's prefix (after its id and scope) by its id, as in the answers above.
    listed = re.sub(
        r"^( *)(\d+)(  \S+ +)(\S+)",
        lambda m: (
            m.group(1) + m.group(2) + m.group(3) + _label(labels, int(m.group(2)), m.group(4))
        ),
        listed,
        flags=re.MULTILINE,
    )
    for value, name in volatile.items():
        listed = listed.replace(value, name)
    listed = re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d", "<when>          ", listed)
    listed = re.sub(r"^ *\d+  ", "  <id>  ", listed, flags=re.MULTILINE)
    check("cli/token-list.txt", listed.encode())


def _digest_history(server: LiveServer, project: ProjectFixture) -> None:
    """Two backfilled runs in the week before WEEK, three in WEEK, one test 4 s slower."""
    base = junit_xml(6, seed=7)
    slower = re.sub(
        rb'name="test_case_1" time="([0-9.]+)"',
        lambda m: b'name="test_case_1" time="%.6f"' % (float(m.group(1)) + 4.0),
        base,
    )

    def at(day: date, hour: int) -> str:
        return datetime(day.year, day.month, day.day, hour, tzinfo=UTC).isoformat()

    before = WEEK - timedelta(days=7)
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
                "started_at": at(WEEK + timedelta(days=2), h),
                "backfill": "true",
                "pipeline": f"w{h}",
            },
        )
        for h in (9, 10, 11)
    ]
    upload_all(server, project.upload_token, uploads)


def _bodies(received: list[bytes], volatile: dict[str, str]) -> bytes:
    """The bodies a receiver got, made stable, in a stable order, one a line."""
    return b"\n".join(sorted(stable(body, volatile) for body in received)) + b"\n"


@pytest.mark.parametrize("fmt", ["json", "slack"])
def test_webhook_bodies_and_answers_are_the_stored_bytes(
    live_server: LiveServer, engine: Engine, database: Database, fmt: str
) -> None:
    watched, weekly = make_project(engine), make_project(engine)
    volatile = {watched.slug: "<changes-slug>", weekly.slug: "<digest-slug>"}
    upload_step_history(live_server, watched)
    _digest_history(live_server, weekly)
    with receiver(200) as rx:
        volatile[rx.url] = "<receiver>"
        hooks: dict[str, dict[str, object]] = {}
        for project in (watched, weekly):
            admin = {"Authorization": f"Bearer {project.admin_token}"}
            made = httpx.post(
                f"{live_server.url}/api/v1/projects/{project.slug}/webhooks",
                json={"url": f"{rx.url}/{fmt}", "format": fmt, "secret": SECRET},
                headers=admin,
            )
            assert made.status_code == 201, made.text
            hooks[project.slug] = made.json()
        _record(f"webhooks-create-{fmt}.json", made, volatile)
        enqueue_new_changes(engine, projects=[watched.id])
        enqueue_weekly_digests(engine, today=WEEK + timedelta(days=9))
        while deliver_due(engine, NOW):
            pass
        got = {
            slug: [r.body for r in rx.received if slug in r.body.decode()]
            for slug in (watched.slug, weekly.slug)
        }
    check(f"deliveries/change-{fmt}.txt", _bodies(got[watched.slug], volatile))
    check(f"deliveries/digest-{fmt}.txt", sums(_bodies(got[weekly.slug], volatile)))

    base = f"{live_server.url}/api/v1/projects/{weekly.slug}"
    admin = {"Authorization": f"Bearer {weekly.admin_token}"}
    _record(f"webhooks-{fmt}.json", httpx.get(f"{base}/webhooks", headers=admin), volatile)
    deliveries = httpx.get(f"{base}/webhook-deliveries", headers=admin)
    _record(f"webhook-deliveries-{fmt}.json", deliveries, volatile)
    for args, name in (
        (["webhook", "list", "--project", weekly.slug, "--json"], "webhook-list.json"),
        (["webhook", "list", "--project", weekly.slug], "webhook-list.txt"),
        (["webhook", "deliveries", "--project", weekly.slug, "--json"], "webhook-deliveries.json"),
        (["webhook", "deliveries", "--project", weekly.slug], "webhook-deliveries.txt"),
    ):
        output = _cli(database, *args)
        output = re.sub(r"^\d+\t(webhook )?\d+\t", r"<id>\t\1<id>\t", output, flags=re.M)
        output = re.sub(r"^\d+\t", "<id>\t", output, flags=re.MULTILINE)
        check(f"cli/{fmt}-{name}", stable(output.encode(), volatile))
    hook_id = hooks[weekly.slug]["id"]
    _record(
        f"webhooks-remove-{fmt}.json",
        httpx.delete(f"{base}/webhooks/{hook_id}", headers=admin),
        volatile,
    )


def test_digest_answers_are_the_stored_bytes(
    live_server: LiveServer, engine: Engine, database: Database
) -> None:
    project = make_project(engine)
    volatile = {project.slug: "<slug>"}
    _digest_history(live_server, project)
    read = {"Authorization": f"Bearer {project.read_token}"}
    url = f"{live_server.url}/api/v1/projects/{project.slug}/digest"
    answer = httpx.get(url, params={"week": (WEEK + timedelta(days=3)).isoformat()}, headers=read)
    assert answer.status_code == 200, answer.text
    check("api/digest.json", b"200\n" + sums(stable(answer.content, volatile)))
    empty = httpx.get(url, params={"week": "2025-06-04"}, headers=read)
    _record("digest-empty.json", empty, volatile)
    week = ["digest", "--project", project.slug, "--week", WEEK.isoformat()]
    check("cli/digest.md", stable(_cli(database, *week).encode(), volatile))
    check("cli/digest.json", sums(stable(_cli(database, *week, "--json").encode(), volatile)))
    assert json.loads(_cli(database, *week, "--json")) == answer.json()
