"""Queue mode end to end: real `pytest --laptime-queue` nodes against a live server and
embedded Postgres, in every failure case. What ran where is the tests' own log, checked by
nodeid."""

from __future__ import annotations

import json
import os
import signal
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
from sqlalchemy import Engine, text

from analysis.queue import PROBE_S
from app.factory import create_app
from app.settings import Settings
from tests.conftest import Database, LiveServer, free_port, make_project
from tests.queue.nodes import counts, finish, make_suite, node_env, runs, start_node, wait_file
from tests.server.app_server import serve
from tests.uploads import upload_all


def junit(seconds: dict[str, float]) -> bytes:
    """A pytest-style JUnit report of `file.py::test` nodeids."""
    cases = "".join(
        f'<testcase classname="{n.split("::")[0][:-3]}" name="{n.split("::")[1]}" time="{s}"/>'
        for n, s in seconds.items()
    )
    return f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{cases}</testsuite></testsuites>'.encode()  # noqa: E501


def status(server_url: str, slug: str, token: str, pipeline: str) -> dict[str, object]:
    answer = httpx.get(
        f"{server_url}/api/v1/projects/{slug}/queues/pipeline",
        params={"pipeline": pipeline},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_two_nodes_run_every_test_exactly_once(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    nodeids = make_suite(tmp_path / "suite", files=8, per_file=3)
    log = tmp_path / "ran.log"
    procs = [
        start_node(
            tmp_path / "suite",
            n,
            2,
            node_env(live_server.url, project.upload_token, project.slug, "p-ok", n, log),
        )
        for n in (1, 2)
    ]
    for proc in procs:
        code, out = finish(proc)
        assert code == 0, out
        assert "(queue)" in out
    assert counts(log) == dict.fromkeys(nodeids, 1)
    report = status(live_server.url, project.slug, project.read_token, "p-ok")
    assert report["done"] is True
    assert report["never_ran"] == []
    assert report["ran_twice"] == []


def test_a_node_killed_mid_batch_loses_its_lease_to_the_other(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    where = tmp_path / "suite"
    nodeids = make_suite(where, files=10, per_file=1, blocking=True)
    log = tmp_path / "ran.log"
    short = {"LAPTIME_QUEUE_LEASE_S": "2", "BLOCK_NODE": "1"}
    env1 = node_env(live_server.url, project.upload_token, project.slug, "p-kill", 1, log, **short)
    doomed = start_node(where, 1, 2, env1)
    wait_file(Path(f"{log}.blocked"))  # node 1 holds its first batch, parked in test_block
    os.kill(doomed.pid, signal.SIGKILL)
    doomed.wait(timeout=30)
    env2 = node_env(live_server.url, project.upload_token, project.slug, "p-kill", 2, log, **short)
    code, out = finish(start_node(where, 2, 2, env2))
    assert code == 0, out
    ran = counts(log)
    assert set(ran) == set(nodeids)  # none left unrun
    assert "test_a_block.py::test_block" in {n for n, where_ in runs(log) if where_ == "2@1"}
    report = status(live_server.url, project.slug, project.read_token, "p-kill")
    node1 = next(n for n in report["nodes"] if n["node"] == "1")  # type: ignore[union-attr]
    # The batch it held when killed expired and went to node 2. Before it, node 1 ran its
    # probe: the block file is most of a node's share, so its first claim was the lightest.
    states = [b["state"] for b in node1["batches"]]  # type: ignore[index]
    assert states[-1] == "expired"
    assert set(states[:-1]) <= {"finished"}
    assert report["never_ran"] == []


def test_an_idle_node_takes_over_what_a_parked_node_has_not_begun(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    where = tmp_path / "suite"
    nodeids = make_suite(where, files=10, per_file=1, blocking=True)
    log = tmp_path / "ran.log"
    # Node 1 claims the whole queue in one batch (a floor that large), begins its first segment
    # (the blocking file, heaviest) and parks in test_block: the slow node holding the tail.
    env1 = node_env(
        live_server.url, project.upload_token, project.slug, "p-take", 1, log,
        BLOCK_NODE="1", LAPTIME_QUEUE_MIN_BATCH_S="1000",
    )  # fmt: skip
    parked = start_node(where, 1, 2, env1)
    wait_file(Path(f"{log}.blocked"))
    env2 = node_env(live_server.url, project.upload_token, project.slug, "p-take", 2, log)
    idle = start_node(where, 2, 2, env2)
    rest = set(nodeids) - {n for n in nodeids if n.startswith("test_a_block.py")}
    deadline = time.monotonic() + 120
    while not rest <= set(counts(log)):  # node 2 runs what node 1 had not begun
        assert time.monotonic() < deadline, runs(log)
        time.sleep(0.05)
    Path(f"{log}.go").touch()
    for proc in (parked, idle):
        code, out = finish(proc)
        assert code == 0, out
    assert counts(log) == dict.fromkeys(nodeids, 1)  # exactly once
    ran_by_2 = {n for n, at in runs(log) if at == "2@1"}
    assert rest <= ran_by_2  # and the block file's tests node 1 had not begun, if cut finer
    assert "test_a_block.py::test_block" not in ran_by_2  # begun: it never moves
    report = status(live_server.url, project.slug, project.read_token, "p-take")
    assert report["ran_twice"] == []
    assert report["never_ran"] == []
    node1 = next(n for n in report["nodes"] if n["node"] == "1")  # type: ignore[union-attr]
    kept = len(nodeids) - len(ran_by_2)
    assert [b["tests"] for b in node1["batches"]] == [kept]  # what it kept of its batch
    with engine.connect() as conn:
        taken = conn.execute(
            text(
                "SELECT e.node, e.detail->>'from_node' FROM work_queue_event e"
                " JOIN work_queue q ON q.id = e.queue_id"
                " WHERE q.pipeline = 'p-take' AND e.kind = 'take-over'"
            )
        ).all()
    assert taken
    assert {tuple(r) for r in taken} == {("2", "1")}


def test_a_long_test_does_not_hold_what_comes_after_it(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    where = tmp_path / "suite"
    nodeids = make_suite(where, files=10, per_file=2, blocking=True)
    # History: test_block is long, the rest short; its file is cut finer. Node 1's first
    # batch is a probe (the lightest tests, about PROBE_S), its next test_block alone.
    seconds = {n: 30.0 if n.endswith("::test_block") else 0.5 for n in nodeids}
    upload_all(live_server, project.upload_token, [("h.xml", junit(seconds), {"pipeline": "h"})])
    log = tmp_path / "ran.log"
    env1 = node_env(
        live_server.url, project.upload_token, project.slug, "p-long", 1, log, BLOCK_NODE="1"
    )
    parked = start_node(where, 1, 2, env1)
    wait_file(Path(f"{log}.blocked"))
    # While node 1 runs its long test it holds nothing else begun: node 2 runs all the rest.
    idle = start_node(
        where, 2, 2, node_env(live_server.url, project.upload_token, project.slug, "p-long", 2, log)
    )
    rest = set(nodeids) - {"test_a_block.py::test_block"}
    deadline = time.monotonic() + 120
    while not rest <= set(counts(log)):
        assert time.monotonic() < deadline, runs(log)
        time.sleep(0.05)
    Path(f"{log}.go").touch()
    for proc in (parked, idle):
        code, out = finish(proc)
        assert code == 0, out
    assert counts(log) == dict.fromkeys(nodeids, 1)  # exactly once
    ran_by_1 = {n for n, at in runs(log) if at == "1@1"}
    assert "test_a_block.py::test_block" in ran_by_1
    probe = ran_by_1 - {"test_a_block.py::test_block"}
    assert 0 < len(probe) * 0.5 <= PROBE_S  # its probe only: node 2 ran all the rest


def test_a_retried_job_replays_the_tests_it_ran(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    where = tmp_path / "suite"
    nodeids = make_suite(where, files=6, per_file=2)
    log = tmp_path / "ran.log"
    for n in (1, 2):
        env = node_env(live_server.url, project.upload_token, project.slug, "p-retry", n, log)
        assert finish(start_node(where, n, 2, env))[0] == 0
    first = {nodeid for nodeid, at in runs(log) if at == "1@1"}
    env = node_env(
        live_server.url, project.upload_token, project.slug, "p-retry", 1, log, LAPTIME_ATTEMPT="2"
    )
    code, out = finish(start_node(where, 1, 2, env))
    assert code == 0, out
    assert "replaying" in out
    again = {nodeid for nodeid, at in runs(log) if at == "1@2"}
    assert again == first
    assert first  # node 1 did run something the first time
    assert set(counts(log)) == set(nodeids)


def test_server_down_at_start_falls_back_to_the_static_shard(tmp_path: Path) -> None:
    where = tmp_path / "suite"
    nodeids = make_suite(where, files=6, per_file=2)
    log = tmp_path / "ran.log"
    dead = f"http://127.0.0.1:{free_port()}"
    for n in (1, 2):
        code, out = finish(start_node(where, n, 2, node_env(dead, "t", "p", "p-down", n, log)))
        assert code == 0, out
        assert "unreachable at start" in out
    assert counts(log) == dict.fromkeys(nodeids, 1)


def test_server_lost_mid_run_leaves_no_test_unrun(
    database: Database, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    where = tmp_path / "suite"
    nodeids = make_suite(where, files=10, per_file=1, blocking=True)
    log = tmp_path / "ran.log"
    app = create_app(Settings(home=database.home, database_url=database.url), engine)
    with ExitStack() as stack:
        url = stack.enter_context(serve(app))
        env = node_env(url, project.upload_token, project.slug, "p-lost", 1, log, BLOCK_NODE="1")
        node = start_node(where, 1, 2, env)
        wait_file(Path(f"{log}.blocked"))
        stack.close()  # the server goes away while node 1 is inside its first batch
    Path(f"{log}.go").touch()
    code, out = finish(node)
    assert code == 0, out
    assert "lost mid-run" in out
    assert set(counts(log)) == set(nodeids)  # node 2 never came: node 1 ran them all


def test_a_budget_too_small_stops_before_the_limit_and_names_the_tests_not_run(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    where = tmp_path / "suite"
    nodeids = make_suite(where, files=4, per_file=2)
    heavy = {"test_f00.py::test_0": 300.0, "test_f01.py::test_1": 200.0}
    seconds = {n: heavy.get(n, 0.01) for n in nodeids}
    upload_all(live_server, project.upload_token, [("h.xml", junit(seconds), {"pipeline": "h"})])
    log = tmp_path / "ran.log"
    env = node_env(
        live_server.url,
        project.upload_token,
        project.slug,
        "p-budget",
        1,
        log,
        LAPTIME_JOB_STARTED_AT=str(time.time()),
    )
    started = time.monotonic()
    code, out = finish(start_node(where, 1, 1, env, "--laptime-budget=60"))
    assert time.monotonic() - started < 60  # stopped before its limit
    assert code == 1, out  # the pipeline fails: tests were left unrun
    ran = set(counts(log))
    assert ran == set(nodeids) - set(heavy)  # every test that fits ran, none was cut
    report = status(live_server.url, project.slug, project.read_token, "p-budget")
    assert set(report["never_ran"]) == set(heavy)  # type: ignore[arg-type]
    for nodeid in heavy:
        assert nodeid in out
    assert report["budget_stops"]


def test_nodes_disagreeing_on_the_collected_set_fail_loudly(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    log = tmp_path / "ran.log"
    make_suite(tmp_path / "a", files=3)
    make_suite(tmp_path / "b", files=4)
    env1 = node_env(live_server.url, project.upload_token, project.slug, "p-mix", 1, log)
    assert finish(start_node(tmp_path / "a", 1, 2, env1))[0] == 0
    env2 = node_env(live_server.url, project.upload_token, project.slug, "p-mix", 2, log)
    code, out = finish(start_node(tmp_path / "b", 2, 2, env2))
    assert code == 1, out
    assert "collected other tests" in out
    assert "test_f03.py::test_0" in out
    assert not [n for n, at in runs(log) if at == "2@1"]  # node 2 ran nothing of a mix
    assert json.dumps(out)  # the output is text


STUBS_URLOPEN = """
import urllib.request

_real = urllib.request.urlopen


def setup_module():
    # As numpy's own suite does: the module's tests see a stub without `timeout`.
    urllib.request.urlopen = lambda url: None


def teardown_module():
    urllib.request.urlopen = _real

"""
# Heavier than half the queue, so the module is cut into single tests and a batch ends (and
# the next is claimed) while its stub is in place.
STUB_TESTS = 30


def test_a_suite_that_stubs_urlopen_does_not_cut_the_node_off(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    project = make_project(engine)
    where = tmp_path / "suite"
    nodeids = make_suite(where, files=2, per_file=1)
    tests = "".join(f"def test_stub_{k}():\n    pass\n\n\n" for k in range(STUB_TESTS))
    (where / "test_a_stubs.py").write_text(STUBS_URLOPEN + tests)
    nodeids += [f"test_a_stubs.py::test_stub_{k}" for k in range(STUB_TESTS)]
    log = tmp_path / "ran.log"
    env = node_env(live_server.url, project.upload_token, project.slug, "p-stub", 1, log)
    code, out = finish(start_node(where, 1, 1, env))
    assert code == 0, out
    assert "INTERNALERROR" not in out
    assert "(queue)" in out
    assert counts(log) == dict.fromkeys(nodeids, 1)
