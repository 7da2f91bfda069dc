"""The shard client: the server's plan when it answers; every collected test when a configured
server gives none (the risky offline split only when asked); without a server, cached
durations, else a hash. No test is left unrun in any case."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from laptime_ci.shards import (
    ServerConfig,
    ShardSpecError,
    load_durations,
    parse_shard_spec,
    plan_shard,
    save_durations,
    split_by_durations,
    split_by_hash,
)
from tests.client.fake_server import fake_server
from tests.conftest import LiveServer, ProjectFixture

COLLECTED = [f"tests/test_{f}.py::test_{i}" for f in "abc" for i in range(7)]


def dead_url() -> str:
    """The URL of a server that was just stopped: nothing listens there any more."""
    with fake_server() as server:
        url = server.url
    return url


def all_shards(server: ServerConfig, cache, total: int = 3, fallback: str | None = None):
    return [
        plan_shard(
            COLLECTED, index=i, total=total, server=server, cache_path=cache, fallback=fallback
        )
        for i in range(1, total + 1)
    ]


def assert_everything(plans) -> None:
    """A shard that could not know its siblings' plan runs every collected test, and says so."""
    assert {p.source for p in plans} == {"all"}
    assert all(sorted(p.nodeids) == sorted(COLLECTED) for p in plans)
    assert all(f"runs all {len(COLLECTED)} collected tests" in p.warning for p in plans)


def assert_partition(plans) -> None:
    flat = [n for plan in plans for n in plan.nodeids]
    assert sorted(flat) == sorted(COLLECTED)  # each test once, none lost


def test_parse_shard_spec() -> None:
    assert parse_shard_spec("2/5") == (2, 5)
    for bad in ("0/3", "4/3", "3", "a/b", "1/0"):
        with pytest.raises(ShardSpecError):
            parse_shard_spec(bad)


def test_hash_split_is_stable_and_balanced_by_count() -> None:
    split = split_by_hash(COLLECTED, 4)
    assert split == split_by_hash(list(reversed(COLLECTED)), 4)
    assert sorted(len(s) for s in split) == [5, 5, 5, 6]
    assert sorted(n for s in split for n in s) == sorted(COLLECTED)


def test_duration_split_balances_seconds_and_places_unknown_tests() -> None:
    durations = {COLLECTED[0]: 10.0, COLLECTED[1]: 9.0, COLLECTED[2]: 1.0}
    split = split_by_durations(COLLECTED, durations, 2)
    assert COLLECTED[0] in split[0]
    assert COLLECTED[1] in split[1]
    assert sorted(n for s in split for n in s) == sorted(COLLECTED)


def test_server_plan_is_used_when_it_answers(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    server = ServerConfig(live_server.url, project.read_token, project.slug, pipeline="run-7")
    plans = all_shards(server, None)
    assert {p.source for p in plans} == {"server"}
    assert all(p.warning is None for p in plans)
    assert len({p.plan_key for p in plans}) == 1
    assert plans[0].labels == {"shard": "1/3"}
    assert_partition(plans)
    # Without a pipeline id the server cannot pin the plan: the shard says so.
    unpinned = all_shards(ServerConfig(live_server.url, project.read_token, project.slug), None)
    assert "no pipeline id" in str(unpinned[0].warning)
    assert_partition(unpinned)


def test_outage_runs_everything_unless_the_risky_fallback_is_asked(tmp_path) -> None:
    server = ServerConfig(dead_url(), "tok", "proj", timeout_s=2)
    cache = tmp_path / "durations.json"
    save_durations(cache, {n: float(i) for i, n in enumerate(COLLECTED)})
    assert_everything(all_shards(server, cache))
    plans = all_shards(server, cache, fallback="cache")
    assert {p.source for p in plans} == {"cache"}
    assert "LAPTIME_SHARD_FALLBACK=cache" in plans[0].warning
    assert "cached durations" in plans[0].warning
    assert "cannot reach" in plans[0].warning
    assert_partition(plans)
    cache.unlink()
    plans = all_shards(server, cache, fallback="cache")
    assert {p.source for p in plans} == {"hash"}
    assert plans[0].warning.startswith("shard plan by nodeid hash")
    assert_partition(plans)


@pytest.mark.parametrize(
    "answer",
    [
        (500, {"detail": "boom"}),
        (403, {"detail": "this token's scope (upload) does not allow read"}),
        (200, {"total": 3, "shards": [{"index": 1, "nodeids": COLLECTED[:2]}]}),
        (200, b"not json"),
    ],
    ids=["5xx", "bad-token", "incomplete-plan", "garbage"],
)
def test_any_bad_answer_runs_everything(answer) -> None:
    with fake_server() as fake:
        fake.posts = [answer]
        assert_everything(all_shards(ServerConfig(fake.url, "t", "p"), None))
        plans = all_shards(ServerConfig(fake.url, "t", "p"), None, fallback="hash")
    assert {p.source for p in plans} == {"hash"}
    assert_partition(plans)


def test_cache_merges_and_ignores_garbage(tmp_path) -> None:
    cache = tmp_path / "d.json"
    save_durations(cache, {"a": 1.0})
    save_durations(cache, {"b": 2.0, "a": 3.0})
    assert load_durations(cache) == {"a": 3.0, "b": 2.0}
    cache.write_text("{not json")
    assert load_durations(cache) is None
    cache.write_text(json.dumps({"durations": {"a": "x", "b": -1, "c": 1}}))
    assert load_durations(cache) == {"c": 1.0}


@pytest.mark.parametrize("fallback", [{}, {"LAPTIME_SHARD_FALLBACK": "hash"}])
def test_cli_prints_the_shard_and_names_the_fallback(tmp_path, fallback) -> None:
    collected = tmp_path / "collected.txt"
    collected.write_text("\n".join(COLLECTED) + "\n\n21 tests collected in 0.01s\n")
    outputs = []
    for index in (1, 2, 3):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "laptime_ci.cli",
                "shard",
                "--index",
                str(index),
                "--total",
                "3",
                "--collected",
                str(collected),
                "--cache",
                str(tmp_path / "no"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={
                "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
                "LAPTIME_URL": dead_url(),
                "LAPTIME_TOKEN": "t",
                "LAPTIME_PROJECT": "p",
                **fallback,
            },
            check=False,
        )
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout.split())
        if fallback:
            assert "warning: shard plan by nodeid hash" in done.stderr
        else:
            assert "runs all 21 collected tests" in done.stderr
    flat = sorted(n for out in outputs for n in out)
    assert flat == (sorted(COLLECTED) if fallback else sorted(COLLECTED * 3))
