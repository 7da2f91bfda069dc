"""The shard client: the server's plan when it answers, else cached durations, else a hash;
every collected test in exactly one shard in every case."""

from __future__ import annotations

import json
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


def all_shards(server: ServerConfig, cache, total: int = 3):
    return [
        plan_shard(COLLECTED, index=i, total=total, server=server, cache_path=cache)
        for i in range(1, total + 1)
    ]


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
    server = ServerConfig(live_server.url, project.read_token, project.slug)
    plans = all_shards(server, None)
    assert {p.source for p in plans} == {"server"}
    assert all(p.warning is None for p in plans)
    assert plans[0].labels == {"shard": "1/3"}
    assert_partition(plans)


def test_outage_falls_back_to_cache_then_hash(tmp_path) -> None:
    server = ServerConfig(dead_url(), "tok", "proj", timeout_s=2)
    cache = tmp_path / "durations.json"
    save_durations(cache, {n: float(i) for i, n in enumerate(COLLECTED)})
    plans = all_shards(server, cache)
    assert {p.source for p in plans} == {"cache"}
    assert "cached durations" in plans[0].warning
    assert "cannot reach" in plans[0].warning
    assert_partition(plans)
    cache.unlink()
    plans = all_shards(server, cache)
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
def test_any_bad_answer_falls_back(answer) -> None:
    with fake_server() as fake:
        fake.posts = [answer]
        plans = all_shards(ServerConfig(fake.url, "t", "p"), None)
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


def test_cli_prints_the_shard_and_names_the_fallback(tmp_path) -> None:
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
            env={"LAPTIME_URL": dead_url(), "LAPTIME_TOKEN": "t", "LAPTIME_PROJECT": "p"},
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "warning: shard plan by nodeid hash" in done.stderr
        outputs.append(done.stdout.split())
    assert sorted(n for out in outputs for n in out) == sorted(COLLECTED)
