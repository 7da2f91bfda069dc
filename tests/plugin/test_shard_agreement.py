"""A sharded pipeline runs every collected test at least once whatever mix of plan sources its
shards used (server up/down/slow/wrong, cache, hash), in any order, in one checkout or many;
exactly once whenever the shards agree; and `laptime-ci shard-verify` fails loudly otherwise.

Every run is a real `pytest` subprocess over a generated project; what ran is read from each
shard's laptime JSON report (the plugin's own record of the tests it ran)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.client.fake_server import fake_server
from tests.conftest import LiveServer, ProjectFixture, free_port
from tests.queue.test_queue_nodes import junit
from tests.uploads import upload_all

ROOT = Path(__file__).resolve().parents[2]
PATHS = os.pathsep.join([str(ROOT), str(ROOT / "client")])


def make_project(where: Path, files: int, per_file: int = 1) -> list[str]:
    """`files` test files of `per_file` tests each; their nodeids."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "pytest.ini").write_text("[pytest]\naddopts = -p no:cacheprovider\n")
    nodeids = []
    for f in range(files):
        body = "".join(f"def test_{t}():\n    pass\n\n" for t in range(per_file))
        (where / f"test_f{f:02d}.py").write_text(body)
        nodeids += [f"test_f{f:02d}.py::test_{t}" for t in range(per_file)]
    return sorted(nodeids)


def base_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LAPTIME_", "GITHUB_", "CI_", "GITLAB", "PYTEST_"))
    }
    env["PYTHONPATH"] = PATHS
    env.update(extra)
    return env


def run_shard(where: Path, index: int, total: int, env: dict[str, str]) -> tuple[list[str], str]:
    """Run shard index/total in `where`; the nodeids it ran (its report) and its output."""
    report = where / f"report-{index}-of-{total}.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"--laptime-shard={index}/{total}",
            f"--laptime-report={report}",
            "-q",
        ],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 5), done.stdout + done.stderr
    ran = [t["nodeid"] for t in json.loads(report.read_text())["tests"]]
    return ran, done.stdout + done.stderr


def full_run(where: Path, env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--laptime-shard=1/1", "-q"],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def verify(records: Sequence[Path], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "laptime_ci.cli", "shard-verify", *map(str, records)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"


@contextmanager
def hanging_server() -> Iterator[str]:
    """Accepts connections and never answers: a server that hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=5)
        for conn in held:
            conn.close()
        listener.close()


def server_env(url: str, **extra: str) -> dict[str, str]:
    return base_env(
        LAPTIME_URL=url,
        LAPTIME_TOKEN="tok",
        LAPTIME_PROJECT="demo",
        LAPTIME_SHARD_TIMEOUT_S="2",
        **extra,
    )


def assert_exactly_once(ran: Counter[str], collected: list[str]) -> None:
    assert sorted(ran) == collected
    assert set(ran.values()) == {1}, {n: c for n, c in ran.items() if c != 1}


def records_of(where: Path) -> list[Path]:
    return sorted((where / ".laptime" / "shards").glob("*.json"))


# --- no server: cache and hash, in one checkout ---------------------------------------------


@pytest.mark.parametrize("order", [(1, 2, 3), (3, 1, 2)])
def test_repro_one_checkout_after_a_full_run(tmp_path: Path, order: tuple[int, ...]) -> None:
    """The issue's repro: LAPTIME_URL at a closed port (no project, so no server is asked),
    one full run, then the shards one after the other in the same checkout."""
    collected = make_project(tmp_path, 12)
    env = base_env(LAPTIME_URL=closed_port_url())
    full_run(tmp_path, env)
    cache_before = (tmp_path / ".laptime" / "durations.json").read_bytes()
    ran: Counter[str] = Counter()
    for index in order:
        nodeids, _ = run_shard(tmp_path, index, 3, env)
        ran.update(nodeids)
        # A shard never rewrites what its siblings plan from.
        assert (tmp_path / ".laptime" / "durations.json").read_bytes() == cache_before
    assert_exactly_once(ran, collected)
    assert verify(records_of(tmp_path), env).returncode == 0


def test_no_cache_at_all_plans_by_hash_and_agrees(tmp_path: Path) -> None:
    collected = make_project(tmp_path, 12)
    env = base_env()
    ran: Counter[str] = Counter()
    for index in (1, 2, 3):
        nodeids, out = run_shard(tmp_path, index, 3, env)
        assert "nodeid hash" in out
        ran.update(nodeids)
    assert_exactly_once(ran, collected)
    assert not (tmp_path / ".laptime" / "durations.json").exists()


def test_shard_fold_merges_the_records_into_the_cache(tmp_path: Path) -> None:
    collected = make_project(tmp_path, 6)
    env = base_env()
    for index in (1, 2):
        run_shard(tmp_path, index, 2, env)
    done = subprocess.run(
        [sys.executable, "-m", "laptime_ci.cli", "shard-fold"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    cache = json.loads((tmp_path / ".laptime" / "durations.json").read_text())
    assert sorted(cache["durations"]) == collected


# --- separate checkouts ----------------------------------------------------------------------


def test_separate_checkouts_with_the_same_cache_agree(tmp_path: Path) -> None:
    collected = make_project(tmp_path / "seed", 12)
    env = base_env()
    full_run(tmp_path / "seed", env)
    ran: Counter[str] = Counter()
    records = []
    for index in (1, 2, 3):
        checkout = tmp_path / f"job{index}"
        shutil.copytree(tmp_path / "seed", checkout)
        nodeids, _ = run_shard(checkout, index, 3, env)
        ran.update(nodeids)
        records += records_of(checkout)
    assert_exactly_once(ran, collected)
    assert verify(records, env).returncode == 0


def test_separate_checkouts_with_different_caches_fail_verify_loudly(tmp_path: Path) -> None:
    """Shards that planned from different caches can disagree: verify names the unrun tests."""
    collected = make_project(tmp_path / "seed", 12)
    env = base_env()
    records = []
    ran: Counter[str] = Counter()
    for index in (1, 2, 3):
        checkout = tmp_path / f"job{index}"
        shutil.copytree(tmp_path / "seed", checkout)
        # Each checkout restored a different cache: one test is slow in each.
        (checkout / ".laptime").mkdir()
        slow = {n: (50.0 if i == index * 3 else 1.0) for i, n in enumerate(collected)}
        (checkout / ".laptime" / "durations.json").write_text(
            json.dumps({"version": 1, "durations": slow})
        )
        nodeids, _ = run_shard(checkout, index, 3, env)
        ran.update(nodeids)
        records += records_of(checkout)
    unrun = sorted(set(collected) - set(ran))
    twice = sorted(n for n, c in ran.items() if c > 1)
    assert unrun or twice  # the caches above do make the shards disagree
    done = verify(records, env)
    assert done.returncode == 1
    for nodeid in unrun:
        assert f"ran in no shard: {nodeid}" in done.stderr
    for nodeid in twice:
        assert f"ran in 2 shards: {nodeid}" in done.stderr
    assert "different plans" in done.stderr


def test_verify_names_a_missing_shard(tmp_path: Path) -> None:
    make_project(tmp_path, 6)
    env = base_env()
    run_shard(tmp_path, 1, 2, env)
    done = verify(records_of(tmp_path), env)
    assert done.returncode == 1
    assert "shard 2/2 left no record" in done.stderr
    assert "ran in no shard: test_f" in done.stderr


# --- a server configured: up, down, slow, wrong ----------------------------------------------


@pytest.mark.parametrize("failure", ["down", "slow", "wrong"])
def test_a_shard_without_the_pinned_plan_runs_everything(tmp_path: Path, failure: str) -> None:
    collected = make_project(tmp_path, 12)
    full_run(tmp_path, base_env())  # a cache exists: it must not be trusted either
    ran: Counter[str] = Counter()

    def shards(url: str) -> None:
        for index in (1, 2, 3):
            nodeids, out = run_shard(tmp_path, index, 3, server_env(url))
            assert "runs all 12 collected tests" in out
            ran.update(nodeids)

    if failure == "down":
        shards(closed_port_url())
    elif failure == "slow":
        with hanging_server() as url:
            shards(url)
    else:
        with fake_server() as server:
            other = [{"index": i, "nodeids": [f"other.py::t{i}"]} for i in (1, 2, 3)]
            server.posts = [(200, {"total": 3, "plan_id": "x", "shards": other})]
            shards(server.url)
    assert sorted(ran) == collected
    assert set(ran.values()) == {3}
    # Duplicates a fallback declared are not a disagreement; verify passes and says so.
    done = verify(records_of(tmp_path), base_env())
    assert done.returncode == 0, done.stderr
    assert "ran everything" in done.stdout


def test_risky_fallback_is_opt_in_and_agrees_when_all_fall_back(tmp_path: Path) -> None:
    collected = make_project(tmp_path, 12)
    env = server_env(closed_port_url(), LAPTIME_SHARD_FALLBACK="hash")
    ran: Counter[str] = Counter()
    for index in (1, 2, 3):
        nodeids, out = run_shard(tmp_path, index, 3, env)
        assert "LAPTIME_SHARD_FALLBACK=hash" in out
        ran.update(nodeids)
    assert_exactly_once(ran, collected)


def test_live_server_pins_the_plan_per_pipeline(
    tmp_path: Path, live_server: LiveServer, project: ProjectFixture
) -> None:
    """Every shard asks the real server; the pipeline's plan is pinned: exactly once."""
    collected = make_project(tmp_path, 40)
    env = base_env(
        LAPTIME_URL=live_server.url,
        LAPTIME_TOKEN=project.read_token,
        LAPTIME_PROJECT=project.slug,
        LAPTIME_PIPELINE="pipe-1",
    )
    ran: Counter[str] = Counter()
    plan_ids = set()
    for index in (2, 1):
        nodeids, out = run_shard(tmp_path, index, 2, env)
        assert "(server" in out
        ran.update(nodeids)
        record = tmp_path / ".laptime" / "shards" / f"shard-{index}-of-2.json"
        plan_ids.add(json.loads(record.read_text())["plan"])
    assert_exactly_once(ran, collected)
    assert len(plan_ids) == 1
    assert verify(records_of(tmp_path), env).returncode == 0


def test_a_pipelines_shards_plan_from_the_history_of_today(
    tmp_path: Path, live_server: LiveServer, project: ProjectFixture
) -> None:
    """A pipeline pins its plan, so its shards may plan from every stored run, today's too:
    a project whose whole history is from today gets shards balanced by it, not by count."""
    collected = make_project(tmp_path, 40)
    heavy = "test_f07.py::test_0"
    seconds = {n: 20.0 if n == heavy else 0.01 for n in collected}
    upload_all(live_server, project.upload_token, [("h.xml", junit(seconds), {"pipeline": "h"})])
    env = base_env(
        LAPTIME_URL=live_server.url,
        LAPTIME_TOKEN=project.read_token,
        LAPTIME_PROJECT=project.slug,
        LAPTIME_PIPELINE="pipe-today",
    )
    shards = {index: set(run_shard(tmp_path, index, 2, env)[0]) for index in (1, 2)}
    alone = next(s for s in shards.values() if heavy in s)
    assert alone == {heavy}, f"the 20 s test shares its shard with {len(alone) - 1} others"
    assert_exactly_once(Counter(n for s in shards.values() for n in s), collected)


def test_live_server_then_server_down_leaves_nothing_unrun(
    tmp_path: Path, live_server: LiveServer, project: ProjectFixture
) -> None:
    """The issue's second repro: shard 1/2 from the server, 2/2 with the server unreachable
    (and a cache in the checkout): every test runs, the fallback shard runs them all."""
    collected = make_project(tmp_path, 40)
    full_run(tmp_path, base_env())
    up = base_env(
        LAPTIME_URL=live_server.url,
        LAPTIME_TOKEN=project.read_token,
        LAPTIME_PROJECT=project.slug,
        LAPTIME_PIPELINE="pipe-2",
    )
    down = {**up, "LAPTIME_URL": closed_port_url()}
    first, _ = run_shard(tmp_path, 1, 2, up)
    second, out = run_shard(tmp_path, 2, 2, down)
    assert "runs all 40 collected tests" in out
    ran = Counter(first + second)
    assert sorted(ran) == collected
    assert len(first) < 40
    assert verify(records_of(tmp_path), up).returncode == 0


def test_a_shard_stopped_part_way_fails_verify(tmp_path: Path) -> None:
    # A CI timeout stops a shard mid-run (KeyboardInterrupt in a test): the tests it never
    # reached ran in no shard, and shard-verify must say so, not count them as run.
    where = tmp_path / "project"
    nodeids = make_project(where, files=6)
    env = base_env(LAPTIME_URL="")
    full_run(where, env)
    records = []
    stopped_at = None
    for index in (1, 2):
        plan = subprocess.run(
            [sys.executable, "-m", "pytest", f"--laptime-shard={index}/2", "--co", "-q"],
            cwd=where, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        mine = [line for line in plan.stdout.splitlines() if line in nodeids]
        if stopped_at is None and len(mine) >= 2:
            # Interrupt this shard at its first test: the rest of its share never runs.
            stopped_at = mine[0]
            path, name = stopped_at.split("::")
            (where / path).write_text(f"def {name}():\n    raise KeyboardInterrupt\n")
        done = subprocess.run(
            [sys.executable, "-m", "pytest", f"--laptime-shard={index}/2", "-q"],
            cwd=where, env=env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode in (0, 2), done.stdout + done.stderr
        records.append(where / ".laptime" / "shards" / f"shard-{index}-of-2.json")
    assert stopped_at is not None
    verdict = verify(records, env)
    assert verdict.returncode == 1, verdict.stdout + verdict.stderr
    assert "ran in no shard" in verdict.stdout + verdict.stderr
