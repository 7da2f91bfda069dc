"""Upload API under a CI fleet's habits: identical uploads at once, and polling right after.

    .venv/bin/python -m bench.bench_upload_api [--clients 16] [--pairs 200] [--timeout 20]

Against a real uvicorn server on a scratch embedded Postgres (no worker, so only the API is
measured): `--clients` identical uploads sent at the same moment (wall time until every one
is answered, answers by status; a client gives up after `--timeout` s), then `--pairs`
sequential POST-then-GET pairs (p50/p95 of the POST, and how many GETs found the upload).
Baseline in the same run: `GET /healthz` latency p50 on the idle server.

Before (the figures README.md quotes; tests/test_before_figures.py checks them):
- `2 of 5 rounds froze past 20 s`: the code at commit f4c35ef086e1 (the parent of 1f4c33e, the
  upload guard), `python -m bench.bench_upload_api --rounds 5 --pairs 200 --timeout 20`.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import httpx

from bench.common import scratch_database

REPORT = b'<testsuite name="s"><testcase classname="c" name="t1" time="0.1"/></testsuite>'


def _serve(url: str) -> tuple[str, object]:
    import socket

    import uvicorn

    from app.db.engine import make_engine
    from app.factory import create_app
    from app.settings import Settings

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    engine = make_engine(url)
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(Settings(database_url=url), engine),
            host="127.0.0.1",
            port=port,
            log_level="error",
        )
    )
    threading.Thread(target=server.run, daemon=True).start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    return f"http://127.0.0.1:{port}", engine


def _token(engine: object) -> str:
    from sqlalchemy import Engine

    from app.db.projects import create_project, create_token

    assert isinstance(engine, Engine)
    with engine.begin() as conn:
        project = create_project(conn, f"bench-{time.time_ns()}")
        return create_token(conn, project, "upload")


def _post(base: str, token: str, job: str, timeout: float, report: bytes = REPORT) -> int | str:
    try:
        return httpx.post(
            f"{base}/api/v1/uploads",
            headers={"Authorization": f"Bearer {token}"},
            files=[("file", ("r.xml", report))],
            data={"job": job},
            timeout=timeout,
        ).status_code
    except httpx.TimeoutException:
        return "timeout"


def concurrent_identical(base: str, token: str, clients: int, timeout: float, job: str) -> None:
    """Identical uploads at once, with a healthz probe running alongside."""
    probes: list[float | str] = []
    done = threading.Event()

    def probe() -> None:
        while not done.is_set() and len(probes) < 1000:
            start = time.perf_counter()
            try:
                httpx.get(f"{base}/healthz", timeout=timeout)
                probes.append(time.perf_counter() - start)
            except httpx.TimeoutException:
                probes.append("timeout")

    prober = threading.Thread(target=probe, daemon=True)
    barrier = threading.Barrier(clients)

    def send(_: int) -> int | str:
        barrier.wait(timeout)
        return _post(base, token, job, timeout)

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=clients) as pool:
        prober.start()
        answers = list(pool.map(send, range(clients)))
    wall = time.perf_counter() - start
    done.set()
    prober.join(timeout + 1)
    worst = max((p for p in probes if isinstance(p, float)), default=float("nan"))
    print(f"{clients} identical uploads at once: all answered in {wall:.2f} s")
    print(f"  answers: {dict(Counter(answers))}")
    print(
        f"  healthz during: {len(probes)} probes, "
        f"{sum(1 for p in probes if p == 'timeout')} timed out, slowest {worst * 1000:.0f} ms"
    )


def post_then_get(base: str, token: str, pairs: int, timeout: float) -> None:
    """Sequential POST, then GET of the url it answered."""
    posts: list[float] = []
    found = 0
    with httpx.Client(timeout=timeout, headers={"Authorization": f"Bearer {token}"}) as client:
        for i in range(pairs):
            report = REPORT.replace(b"t1", f"t{i}".encode())
            start = time.perf_counter()
            answer = client.post(
                f"{base}/api/v1/uploads", files=[("file", ("r.xml", report))], data={"job": "pg"}
            )
            posts.append(time.perf_counter() - start)
            got = client.get(f"{base}{answer.json()['url']}")
            found += got.status_code == 200
    posts.sort()
    p95 = posts[int(0.95 * (len(posts) - 1))]
    print(
        f"{pairs} POST-then-GET pairs: GET found {found}/{pairs}; POST p50 "
        f"{statistics.median(posts) * 1000:.1f} ms, p95 {p95 * 1000:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of identical uploads")
    args = parser.parse_args()
    with scratch_database() as (url, _dsn):
        base, engine = _serve(url)
        token = _token(engine)
        idle = []
        for _ in range(20):
            start = time.perf_counter()
            httpx.get(f"{base}/healthz", timeout=args.timeout)
            idle.append(time.perf_counter() - start)
        print(f"baseline: healthz p50 on the idle server {statistics.median(idle) * 1000:.1f} ms")
        post_then_get(base, token, args.pairs, args.timeout)
        for i in range(args.rounds):
            concurrent_identical(base, token, args.clients, args.timeout, f"x{i}")


if __name__ == "__main__":
    main()
