"""Uploads as a CI fleet sends them: identical ones at the same moment, and polling right
after the answer."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx
from sqlalchemy import Engine, text

from tests.conftest import LiveServer, ProjectFixture
from tests.server.test_upload_flow import wait_done

REPORT = b'<testsuite name="s"><testcase classname="c" name="t1" time="0.1"/></testsuite>'
CLIENTS = 16
# A client gives up after this: the bound on "answered within a few seconds".
CLIENT_TIMEOUT_S = 10.0


def _post(server: LiveServer, token: str, job: str, report: bytes = REPORT) -> httpx.Response:
    return httpx.post(
        f"{server.url}/api/v1/uploads",
        headers={"Authorization": f"Bearer {token}"},
        files=[("file", ("r.xml", report))],
        data={"job": job},
        timeout=CLIENT_TIMEOUT_S,
    )


def test_identical_uploads_at_once_answer_fast_and_store_once(
    live_server: LiveServer, engine: Engine, project: ProjectFixture
) -> None:
    barrier = threading.Barrier(CLIENTS + 1)
    sending = threading.Event()
    health: list[int] = []

    def send(_: int) -> httpx.Response:
        barrier.wait(CLIENT_TIMEOUT_S)
        return _post(live_server, project.upload_token, "x")

    def probe() -> None:
        barrier.wait(CLIENT_TIMEOUT_S)
        # Bounded: stops when the uploads are answered, or after 500 probes.
        while sending.is_set() and len(health) < 500:
            health.append(httpx.get(f"{live_server.url}/healthz", timeout=5).status_code)

    sending.set()
    prober = threading.Thread(target=probe)
    prober.start()
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        answers = list(pool.map(send, range(CLIENTS)))
    sending.clear()
    prober.join(10)

    assert Counter(a.status_code for a in answers) == {202: 1, 200: CLIENTS - 1}
    ids = {a.json()["id"] for a in answers}
    assert len(ids) == 1
    assert all(a.json()["duplicate"] for a in answers if a.status_code == 200)
    assert health  # healthz answered while they were in flight, every time
    assert set(health) == {200}
    with engine.connect() as conn:
        uploads = conn.execute(
            text("SELECT count(*) FROM upload WHERE project_id = :p"), {"p": project.id}
        ).scalar_one()
    assert uploads == 1
    assert wait_done(live_server, project.upload_token, ids.pop())["status"] == "done"
    with engine.connect() as conn:
        runs = conn.execute(
            text("SELECT count(*) FROM run WHERE project_id = :p"), {"p": project.id}
        ).scalar_one()
    assert runs == 1


def test_every_upload_is_readable_right_after_its_answer(
    live_server: LiveServer, project: ProjectFixture
) -> None:
    headers = {"Authorization": f"Bearer {project.upload_token}"}
    missing = []
    with httpx.Client(timeout=CLIENT_TIMEOUT_S, headers=headers) as client:
        for i in range(200):
            report = REPORT.replace(b"t1", f"t{i}".encode())
            answer = client.post(
                f"{live_server.url}/api/v1/uploads",
                files=[("file", ("r.xml", report))],
                data={"job": "poll"},
            )
            assert answer.status_code == 202, answer.text
            got = client.get(f"{live_server.url}{answer.json()['url']}")
            if got.status_code != 200:
                missing.append((i, got.status_code))
    assert missing == []
