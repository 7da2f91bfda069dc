"""Queue mode's JSON contracts, byte for byte: every answer of the queue API on one scripted
run of two nodes (open, join, claim, start, heartbeat, finish, a budget stop, release, done,
status, list), and `laptime queue show` / `list`, compared with tests/data/golden/.

What a run's clock decides (seconds since the queue opened, when it opened) and what the
database's sequences number (queue and claim ids) are replaced by placeholders; the rest,
predictions and item order included, must be equal."""

from __future__ import annotations

import re
from typing import Any

import httpx
from click.testing import CliRunner
from sqlalchemy import Engine

from app.cli.main import cli
from tests.conftest import Database, LiveServer, make_project
from tests.queue.test_queue_api import COLLECTED, Node, with_history
from tests.server.test_golden_answers import check, normalise

# Seconds the clock decides: when a batch was claimed, began, ended; a node's finish; waits.
_CLOCK = re.compile(
    rb'"(claimed_s|started_s|finished_s|finish_s|at_s|wait_s|idle_tail_s)": ?(-?[0-9.eE+-]+)'
)
_SEQUENCE = re.compile(rb'"(queue_id|claim_id)": ?(\d+)')
_OPENED = re.compile(rb'"opened_at": ?"[^"]*"')
# The queue's plan id hashes its queue id (a sequence's number).
_PLAN = re.compile(rb'"plan_id": ?"[0-9a-f]{12}"')


def queue_bytes(body: bytes, volatile: dict[str, str]) -> bytes:
    """An answer with clock seconds, queue and claim ids and the opening time made stable."""
    body = _CLOCK.sub(lambda m: b'"' + m.group(1) + b'":"<s>"', body)
    body = _OPENED.sub(b'"opened_at":"<time>"', body)
    body = _PLAN.sub(b'"plan_id":"<plan>"', body)
    seen: dict[tuple[bytes, bytes], int] = {}

    def ordinal(match: re.Match[bytes]) -> bytes:
        name, value = match.group(1), match.group(2)
        number = seen.setdefault((name, value), sum(1 for n, _ in seen if n == name) + 1)
        return b'"%s":"<%s%d>"' % (name, name[:-3], number)

    body = _SEQUENCE.sub(ordinal, body)
    return normalise(body, volatile)


def _text_bytes(output: str, slug: str) -> bytes:
    """`laptime queue` text with its clock seconds and ids made stable."""
    output = output.replace(slug, "<slug>")
    output = re.sub(r"queue \d+ of", "queue <queue> of", output)
    output = re.sub(r"#\d+ ", "#<claim> ", output)
    output = re.sub(r"(wait|idle tail|done at|at) [0-9.]+ s", r"\1 <s>", output)
    output = re.sub(r"[0-9.]+ s -> ([0-9.]+ s|–)", "<s> -> <s>", output)
    output = re.sub(r"^\d+\t(.*)\t\S+$", r"<queue>\t\1\t<time>", output, flags=re.MULTILINE)
    return output.encode()


def _record(name: str, response: httpx.Response, volatile: dict[str, str]) -> Any:
    assert response.status_code in (200, 201), response.text
    body = queue_bytes(response.content, volatile)
    check(f"api/{name}", f"{response.status_code}\n".encode() + body)
    return response.json()


def test_queue_answers_are_the_stored_bytes(
    live_server: LiveServer, engine: Engine, database: Database
) -> None:
    project = make_project(engine)
    volatile = {project.slug: "<slug>"}
    with_history(live_server, project)
    one, two = Node(live_server, project, "1"), Node(live_server, project, "2")
    collected = [*COLLECTED, "tests/test_new.py::test_one"]
    _record("queue-open.json", one.open("golden", collected), volatile)
    _record("queue-join.json", two.open("golden", list(reversed(collected))), volatile)
    queue = f"/{one.queue_id}"
    batch = _record("queue-claim-batch.json", one.post(f"{queue}/claims", one.who), volatile)
    claim = f"{queue}/claims/{batch['claim_id']}"
    _record("queue-start.json", one.post(f"{claim}/start", {}), volatile)
    beat = one.post(f"{queue}/heartbeat", {**one.who, "lease_s": 60.0})
    _record("queue-heartbeat.json", beat, volatile)
    results = [
        {"nodeid": n, "duration_s": 1.5, "outcome": "passed"}
        for item in batch["items"]
        for n in item["nodeids"]
    ]
    results.append({"nodeid": "tests/elsewhere.py::test_x", "duration_s": 1.0, "outcome": None})
    _record("queue-finish.json", one.post(f"{claim}/finish", {"results": results}), volatile)
    stop = two.post(f"{queue}/claims", {**two.who, "remaining_s": 0.5, "lease_s": 30.0})
    _record("queue-claim-budget.json", stop, volatile)
    released = two.post(f"{queue}/release", {**two.who, "reason": "budget"})
    _record("queue-release.json", released, volatile)
    one.drain()
    done = one.post(f"{queue}/claims", {**one.who, "min_batch_s": 2.0})
    _record("queue-claim-done.json", done, volatile)
    # A retried job (attempt 2 of node 1) replays what its first attempt ran: run twice.
    retried = Node(live_server, project, "1", attempt=2)
    _record("queue-join-retry.json", retried.open("golden", collected), volatile)
    again = retried.post(f"{queue}/claims", retried.who)
    replay = _record("queue-claim-replay.json", again, volatile)
    retried.finish(replay)

    read = {"Authorization": f"Bearer {project.read_token}"}
    base = f"{live_server.url}/api/v1/projects/{project.slug}/queues"
    status = httpx.get(f"{base}{queue}", headers=read, timeout=60)
    _record("queue-status.json", status, volatile)
    by_pipeline = httpx.get(f"{base}/pipeline", params={"pipeline": "golden"}, headers=read)
    assert by_pipeline.content == status.content
    _record("queue-list.json", httpx.get(base, headers=read, timeout=60), volatile)

    env = {"DATABASE_URL": database.url}
    show = ["queue", "show", "--project", project.slug, "--pipeline", "golden"]
    shown = CliRunner().invoke(cli, [*show, "--json"], env=env)
    assert shown.exit_code == 0, shown.output
    check("cli/queue-show.json", queue_bytes(shown.output.encode(), volatile))
    text = CliRunner().invoke(cli, show, env=env)
    assert text.exit_code == 0, text.output
    check("cli/queue-show.txt", _text_bytes(text.output, project.slug))
    listed = CliRunner().invoke(cli, ["queue", "list", "--project", project.slug], env=env)
    assert listed.exit_code == 0, listed.output
    check("cli/queue-list.txt", _text_bytes(listed.output, project.slug))


def test_a_batch_in_its_runners_words_is_the_stored_bytes(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    node = Node(live_server, project, "0")
    collected = ["src/a.test.js::adds", "src/a.test.js::subtracts", "src/b.test.js::parses"]
    opened = node.post(
        "", {**node.who, "pipeline": "js", "collected": collected, "runner": "jest", "nodes": 1}
    )
    _record("queue-open-jest.json", opened, {project.slug: "<slug>"})
    node.queue_id = opened.json()["queue_id"]
    batch = node.post(f"/{node.queue_id}/claims", node.who)
    answer = _record("queue-claim-jest.json", batch, {project.slug: "<slug>"})
    assert answer["selection"] is not None
