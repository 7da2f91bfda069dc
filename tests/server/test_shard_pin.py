"""The shard plan is pinned per pipeline: every shard of one pipeline gets the first shard's
plan even when the durations change between shard starts; another collection is refused."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import Engine

from tests.conftest import LiveServer, make_project
from tests.server.test_plan_accuracy import junit
from tests.uploads import upload_all

COLLECTED = [f"tests/test_{n}.py::test_one" for n in "abcdef"]


def ask(server: LiveServer, token: str, slug: str, collected: list[str], **params: Any) -> Any:
    return httpx.post(
        f"{server.url}/api/v1/projects/{slug}/shards",
        params={"total": 2, **params},
        json=collected,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def history(server: LiveServer, token: str, seconds: list[float], tag: str) -> None:
    report = junit(dict(zip(COLLECTED, seconds, strict=True)))
    upload_all(
        server, token, [(f"{tag}{i}.xml", report, {"pipeline": f"{tag}{i}"}) for i in range(3)]
    )


def test_every_shard_of_a_pipeline_gets_the_pinned_plan(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    history(live_server, project.upload_token, [60, 50, 1, 1, 1, 1], "old")
    first = ask(live_server, project.read_token, project.slug, COLLECTED, pipeline="run-1")
    assert first.status_code == 200, first.text
    # Durations change between the shards' starts (another pipeline's uploads land).
    history(live_server, project.upload_token, [1, 1, 1, 1, 90, 100], "new")
    unpinned = ask(live_server, project.read_token, project.slug, COLLECTED)
    assert unpinned.json()["shards"] != first.json()["shards"]  # the data did change the plan
    for index in (2, 1):
        again = ask(
            live_server, project.read_token, project.slug, COLLECTED, pipeline="run-1", index=index
        )
        assert again.status_code == 200
        assert again.json()["plan_id"] == first.json()["plan_id"]
        assert again.json()["shards"] == [first.json()["shards"][index - 1]]
    # Another pipeline gets a plan of today's data.
    other = ask(live_server, project.read_token, project.slug, COLLECTED, pipeline="run-2")
    assert other.json()["shards"] == unpinned.json()["shards"]
    # A shard of run-1 that collected other tests is told so; the client then runs them all.
    wrong = ask(live_server, project.read_token, project.slug, COLLECTED[:5], pipeline="run-1")
    assert wrong.status_code == 409
    assert wrong.json()["code"] == "shard-pin-mismatch"
