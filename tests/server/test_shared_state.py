"""`laptime serve --workers N` keeps no limit per process: the failed-authentication budget is
counted in the database every web process reads, its 429 says how long the window still runs,
and the kept-frames budget is the deployment's, divided among the web processes."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import socket
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from app.db.engine import make_engine
from tests.conftest import make_project
from tests.server.conftest import start_serve, wait_for
from tests.server.test_scale_out import _descendants, _is_web_process

WINDOW_S = 60


def _budgets(port: int) -> dict[int, float]:
    """laptime_frame_cache_budget_bytes of every live web process, by pid."""
    scrape = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    found = re.findall(
        r'^laptime_frame_cache_budget_bytes\{pid="(\d+)"\} (\S+)$', scrape, re.MULTILINE
    )
    return {int(pid): float(value) for pid, value in found}


@pytest.fixture
def two_web_processes(private_db: str) -> Iterator[tuple[int, set[int]]]:
    """`serve --workers 2` (no ingest worker) with a 64 MiB frame budget and a 1 s header
    deadline: (port, web pids)."""
    serve, port = start_serve(
        private_db,
        "--workers",
        "2",
        "--ingest-workers",
        "0",
        workers_beating=None,
        env={"LAPTIME_FRAME_CACHE_MIB": "64", "LAPTIME_HEADER_TIMEOUT_S": "1"},
    )
    try:
        pids = {pid for pid in _descendants(serve.pid) if _is_web_process(pid)}
        assert len(pids) == 2, pids
        # /healthz answered from one process; the other may still be building its app.
        # A process's gauge is on record (0) from its import, before its app sets it.
        wait_for(
            lambda: {pid for pid, budget in _budgets(port).items() if budget > 0} == pids,
            60,
            "every web process built its app",
        )
        yield port, pids
    finally:
        serve.send_signal(signal.SIGTERM)
        try:
            serve.wait(timeout=15)
        except subprocess.TimeoutExpired:
            serve.kill()
            serve.wait(timeout=10)


def _guess(port: int, path: str, i: int, pids: set[int]) -> tuple[int, str | None, int | None]:
    """One wrong token on a new connection from 127.0.0.3: (status, Retry-After, process)."""
    conn = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=30, source_address=("127.0.0.3", 0)
    )
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer lt_read_guess{i}"})
        answer = conn.getresponse()
        answer.read()
        owner = _owner(port, conn.sock.getsockname()[1], pids)
        return answer.status, answer.getheader("retry-after"), owner
    finally:
        conn.close()


def _owner(server_port: int, client_port: int, pids: set[int]) -> int | None:
    """Which process holds the server side of the connection from 127.0.0.3:`client_port`."""
    local, remote = f"0100007F:{server_port:04X}", f"0300007F:{client_port:04X}"
    with open("/proc/net/tcp") as table:
        inodes = [f[9] for f in (line.split() for line in table) if f[1:3] == [local, remote]]
    wanted = {f"socket:[{inode}]" for inode in inodes}
    for pid in pids:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                    return pid
    return None


def test_failed_auth_budget_is_one_for_every_web_process(
    private_db: str, two_web_processes: tuple[int, set[int]]
) -> None:
    port, pids = two_web_processes
    engine = make_engine(private_db, pool_size=1)
    try:
        project = make_project(engine)
    finally:
        engine.dispose()
    path = f"/api/v1/projects/{project.slug}/jobs"
    answers = []
    limited_by: set[int | None] = set()
    # Connections land on either process; go on until each has refused at least once
    # (bounded: the kernel hands connections to both long before this).
    for i in range(300):
        status, retry_after, owner = _guess(port, path, i, pids)
        answers.append((status, retry_after, owner))
        if status == 429:
            limited_by.add(owner)
        if i >= 31 and pids <= limited_by:
            break
    statuses = [status for status, _, _ in answers]
    # The documented budget, for the deployment: 30 failures a minute, then 429s.
    assert statuses[:30] == [401] * 30, statuses
    assert set(statuses[30:]) == {429}, statuses
    # However the 30 failures fell between the processes, every process refuses the next
    # ones: each sees the failures the other counted.
    assert pids <= limited_by, "every web process refuses once the shared budget is spent"
    # Retry-After is what is left of the 60 s window that the first failure opened.
    waits = [int(retry) for status, retry, _ in answers if status == 429 and retry]
    assert len(waits) == len(statuses) - 30
    assert all(WINDOW_S // 2 <= wait <= WINDOW_S for wait in waits), waits
    # A right token from another address is unaffected.
    good = httpx.get(
        f"http://127.0.0.1:{port}{path}",
        headers={"Authorization": f"Bearer {project.read_token}"},
        timeout=30,
    )
    assert good.status_code == 200


def test_frame_budget_is_divided_among_web_processes(
    two_web_processes: tuple[int, set[int]],
) -> None:
    port, pids = two_web_processes
    # LAPTIME_FRAME_CACHE_MIB=64 for the deployment: 32 MiB in each of the two processes.
    assert _budgets(port) == dict.fromkeys(pids, 32.0 * 1024 * 1024)


def test_serve_gives_its_web_processes_the_header_deadline(
    two_web_processes: tuple[int, set[int]],
) -> None:
    port, _ = two_web_processes
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.settimeout(10)  # far past the 1 s deadline: a cut-off answers long before
        received = sock.recv(65536)
    assert received.startswith(b"HTTP/1.1 408 "), received
