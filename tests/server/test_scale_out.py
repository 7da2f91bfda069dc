"""`laptime serve --workers 2 --ingest-workers 2`: two web processes and two ingest workers on
one database take 200 concurrent uploads; every upload is stored exactly once, and both web
processes give the same answers, before and after an ingest (their kept frames follow the
data version in the database, not anything in one process)."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from app.db.engine import make_engine
from tests.conftest import ProjectFixture, make_project
from tests.server.conftest import scalar, start_serve, wait_for
from tests.server.test_rollup_api import junit
from tests.server.test_sigterm import _alive

UPLOADS = 200
TESTS = 5
STOP_WITHIN_S = 10


def _report(i: int) -> tuple[bytes, float]:
    """Upload i's report (the same five tests, durations of its own) and its total seconds."""
    seconds = [round(0.01 * (i + 1) + 0.001 * k, 6) for k in range(TESTS)]
    cases = [("tests.test_scale", f"test_{k}", s, "passed") for k, s in enumerate(seconds)]
    return junit(cases), sum(seconds)


def _descendants(pid: int) -> set[int]:
    """Every process below `pid` (the web processes and the ingest workers)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            with open(f"/proc/{parent}/task/{parent}/children") as children:
                kids = {int(p) for p in children.read().split()}
        except FileNotFoundError:
            continue
        todo.extend(kids - found)
        found |= kids
    return found


def _environ(pid: int) -> dict[str, str]:
    with open(f"/proc/{pid}/environ", "rb") as environ:
        pairs = [item.split(b"=", 1) for item in environ.read().split(b"\0") if b"=" in item]
    return {k.decode(): v.decode() for k, v in pairs}


def _is_web_process(pid: int) -> bool:
    """uvicorn spawns its web processes with multiprocessing (not its resource tracker)."""
    with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
        return b"spawn_main" in cmdline.read()


def _owner_of_connection(server_port: int, client_port: int, pids: set[int]) -> int | None:
    """Which process holds the server side of the TCP connection from `client_port`."""
    local, remote = f"0100007F:{server_port:04X}", f"0100007F:{client_port:04X}"
    with open("/proc/net/tcp") as table:
        inodes = [f[9] for f in (line.split() for line in table) if f[1:3] == [local, remote]]
    if not inodes:
        return None
    wanted = f"socket:[{inodes[0]}]"
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except (FileNotFoundError, PermissionError):
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == wanted:
                    return pid
            except OSError:
                continue
    return None


def _read_once(port: int, path: str, token: str, pids: set[int]) -> tuple[int | None, Any]:
    """GET `path` on a new connection; (the process that answered, the JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        answer = conn.getresponse()
        body = json.loads(answer.read())
        assert answer.status == 200, body
        # The connection is kept alive, so the process that accepted it still holds it.
        return _owner_of_connection(port, conn.sock.getsockname()[1], pids), body
    finally:
        conn.close()


def _read_from_each(port: int, path: str, token: str, web_pids: set[int]) -> dict[int, Any]:
    """The answer of every web process to the same question (bounded number of tries)."""
    answers: dict[int, Any] = {}
    with ThreadPoolExecutor(8) as pool:
        for _ in range(25):
            batch = pool.map(lambda _: _read_once(port, path, token, web_pids), range(8))
            for pid, body in batch:
                if pid is not None:
                    answers.setdefault(pid, body)
            if set(answers) == web_pids:
                return answers
    raise AssertionError(f"only processes {sorted(answers)} of {sorted(web_pids)} answered")


@pytest.fixture
def scaled_serve(private_db: str) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    serve, port = start_serve(
        private_db, "--workers", "2", "--ingest-workers", "2", workers_beating=2
    )
    try:
        yield serve, port
    finally:
        everyone = _descendants(serve.pid)
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=STOP_WITHIN_S)
        except subprocess.TimeoutExpired:
            serve.kill()
            raise AssertionError(f"serve still running {STOP_WITHIN_S} s after SIGTERM") from None
        # Nothing left behind (multiprocessing's resource tracker leaves once serve has gone).
        wait_for(lambda: not any(map(_alive, everyone)), 5, "every child of serve gone")


def test_two_web_processes_and_two_workers(
    private_db: str, scaled_serve: tuple[subprocess.Popen[bytes], int]
) -> None:
    serve, port = scaled_serve
    engine = make_engine(private_db, pool_size=1)
    try:
        project = make_project(engine)
    finally:
        engine.dispose()
    web_pids = {pid for pid in _descendants(serve.pid) if _is_web_process(pid)}
    assert len(web_pids) == 2, web_pids
    # Every web process and ingest worker writes its metrics to one directory serve made.
    shared = {_environ(pid).get("PROMETHEUS_MULTIPROC_DIR") for pid in _descendants(serve.pid)}
    assert len(shared) == 1
    assert os.path.isdir(str(shared.pop()))
    started_at = datetime.now(UTC).replace(hour=8, minute=0, second=0, microsecond=0).isoformat()

    def post(i: int) -> int:
        body, _ = _report(i)
        answer = httpx.post(
            f"http://127.0.0.1:{port}/api/v1/uploads",
            headers={"Authorization": f"Bearer {project.upload_token}"},
            files=[("file", ("r.xml", body))],
            data={"job": f"job{i % 4}", "pipeline": f"p{i}", "started_at": started_at},
            timeout=60,
        )
        assert answer.status_code == 202, answer.text
        return int(answer.json()["id"])

    with ThreadPoolExecutor(16) as pool:
        ids = list(pool.map(post, range(UPLOADS)))
    assert len(set(ids)) == UPLOADS

    def count(sql: str) -> int:
        return scalar(private_db, sql, project.id)

    wait_for(
        lambda: (
            count("SELECT count(*) FROM upload WHERE project_id = %s AND status = 'done'")
            == UPLOADS
        ),
        60,
        "every upload ingested",
    )
    _assert_stored_once(count)
    expected = sum(_report(i)[1] for i in range(UPLOADS))
    _assert_reads_agree(port, project, web_pids, runs=UPLOADS, total_s=expected)

    # One more upload after both processes have kept frames of the old data: both see it.
    post(UPLOADS)
    wait_for(
        lambda: count("SELECT count(*) FROM run WHERE project_id = %s") == UPLOADS + 1,
        30,
        "the last upload ingested",
    )
    expected += _report(UPLOADS)[1]
    _assert_reads_agree(port, project, web_pids, runs=UPLOADS + 1, total_s=expected)


def _assert_stored_once(count: Callable[[str], int]) -> None:
    """Runs, results and claims: each upload exactly once, by the two workers together."""
    assert count("SELECT count(*) FROM run WHERE project_id = %s") == UPLOADS
    assert count("SELECT count(DISTINCT upload_id) FROM run WHERE project_id = %s") == UPLOADS
    assert count("SELECT count(*) FROM test_result WHERE project_id = %s") == UPLOADS * TESTS
    claims = ("SELECT count({}) FROM upload_attempt a JOIN upload u ON u.id = a.upload_id "
              "WHERE u.project_id = %s")  # fmt: skip
    assert count(claims.format("*")) == UPLOADS  # no upload claimed twice
    assert count(claims.format("DISTINCT a.worker")) == 2  # both workers took a share


def _assert_reads_agree(
    port: int, project: ProjectFixture, web_pids: set[int], *, runs: int, total_s: float
) -> None:
    """Each web process answers the rollup with the current data, and they agree."""
    path = f"/api/v1/projects/{project.slug}/rollups?by=test&days=7"
    answers = _read_from_each(port, path, project.read_token, web_pids)
    first, second = answers.values()
    assert first == second
    assert first["grand_total_s"] == pytest.approx(total_s)
    assert [row["runs"] for row in first["rows"]] == [runs] * TESTS
