"""Sustained upload rate, upload latency and drain time with 0, 1 and 3 workers.

    .venv/bin/python -m bench.bench_upload_rate [--clients 12] [--uploads 10] [--tests 500]
        [--known] [--gzip] [--phases 0,1,3]

A real `laptime serve --no-worker` API process and real `laptime worker` processes on a scratch
embedded Postgres. Each phase uses a fresh project: `--clients` threads (httpx) each POST
`--uploads` distinct JUnit reports of `--tests` testcases, written before the phase's clock
starts (in CI the runner writes them on the job's machine; until 2026-12-06 each client thread
wrote its own inside the phase, on the cores it measures). Measured per phase:
acknowledged uploads per second while the clients send, p50/p95 upload latency, and the drain
time (last acknowledgement to every upload `done`). Baseline, same run: the API with no worker
running, so the ratios say what ingesting alongside costs the uploaders, and what 3 workers buy
over 1.
`--phases` lists the phases' worker counts in order; a count ending in `-` runs its workers
without parse-ahead (ingest/parse_ahead.py), so `0,1-,1,1-,1` alternates without and with it.
The CPU each part used per upload (clients, API, workers, PostgreSQL with every backend, from
/proc over the phase) bounds the rate: while an upload costs that much CPU in all, no more than
cores x 1000 ms over that sum can be done per second.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import threading
import time
from dataclasses import dataclass

import httpx
import psycopg

from bench.common import (
    count,
    cpu_s,
    poll,
    postmaster_pid,
    scratch_database,
    start_serve,
    start_workers,
    tree_cpu_s,
)
from ingest.parsers.compression import is_gzip
from laptime_ci.upload import gzipped
from tests.factories import junit_xml


@dataclass
class Phase:
    """What one configuration measured."""

    workers: int
    parse_ahead: bool
    sent: int
    send_s: float
    latencies_s: list[float]
    drain_s: float | None
    # CPU seconds each part used from the first send to the drain's end.
    cpu: dict[str, float]

    @property
    def rate(self) -> float:
        return self.sent / self.send_s

    def p(self, q: float) -> float:
        return statistics.quantiles(self.latencies_s, n=100)[int(q) - 1]

    @property
    def label(self) -> str:
        return f"workers={self.workers}" + ("" if self.parse_ahead else " (no parse-ahead)")


# Per worker, two full batches of the default LAPTIME_WORKER_BATCH_UPLOADS (8).
WARM_UPLOADS = 16


def _token(url: str) -> str:
    from app.db.engine import make_engine
    from app.db.projects import create_project, create_token

    engine = make_engine(url)
    with engine.begin() as conn:
        project = create_project(conn, f"bench-{time.time_ns()}")
        token = create_token(conn, project, "upload")
    engine.dispose()
    return token


def _reports(
    client: int, uploads: int, tests: int, known: bool = False, gzip: bool = False
) -> list[bytes]:
    """One client's reports. Distinct tests in every upload (each a suite's first), or with
    `known` the same suite of the client's job every time, as CI jobs upload (durations differ
    by seed either way); with `gzip`, compressed as `laptime-ci upload` sends them."""
    reports = [
        junit_xml(
            tests,
            seed=client * 1000 + i,
            prefix=f"tests/c{client}/m" if known else f"tests/c{client}/u{i}/m",
        )
        for i in range(uploads)
    ]
    return [gzipped(report) for report in reports] if gzip else reports


def _send(base: str, token: str, client: int, reports: list[bytes], out: list[float]) -> None:
    """POST each report as client `client`'s job, appending each upload's latency to `out`."""
    with httpx.Client(base_url=base, timeout=60) as http:
        for i, body in enumerate(reports):
            start = time.perf_counter()
            answer = http.post(
                "/api/v1/uploads",
                headers={"Authorization": f"Bearer {token}"},
                files={"file": ("junit.xml.gz" if is_gzip(body) else "junit.xml", body)},
                data={"job": f"job{client}", "pipeline": f"p{i}"},
            )
            out.append(time.perf_counter() - start)
            answer.raise_for_status()


def _compacted(dsn: str) -> bool:
    """Every stored run is in the per-test rollups too (ingest/rollup_compaction.py; code from
    before compaction kept them in the ingest, and has no `run.compacted`)."""
    has_column = count(
        dsn,
        "SELECT count(*) FROM information_schema.columns "
        "WHERE table_name = 'run' AND column_name = 'compacted'",
    )
    return not has_column or count(dsn, "SELECT count(*) FROM run WHERE NOT compacted") == 0


def _cpu_parts(api: int, workers: list[int], postmaster: int) -> dict[str, float]:
    """CPU seconds used so far by the uploading clients (this process), the API server, the
    workers and PostgreSQL (the server and every backend)."""
    return {
        "clients": cpu_s(os.getpid()),
        "API": tree_cpu_s(api),
        "workers": sum(tree_cpu_s(pid) for pid in workers),
        "Postgres": tree_cpu_s(postmaster),
    }


def run_phase(
    url: str, dsn: str, base: str, phase: str, args: argparse.Namespace, api: int
) -> Phase:
    """One configuration (`--phases` item): start its workers, send, wait for the drain."""
    workers, parse_ahead = int(phase.rstrip("-")), not phase.endswith("-")
    postmaster = postmaster_pid(dsn)
    token = _token(url)
    # Unmeasured warm-up: a backlog queued before the workers start, so each claims full
    # batches and its parse-ahead process is up, as in a worker that has seen a backlog.
    warm = _reports(98, WARM_UPLOADS * max(workers, 1), args.tests, args.known, args.gzip)
    _send(base, token, 98, warm, [])
    procs = start_workers(url, workers, {"LAPTIME_WORKER_PARSE_AHEAD": str(parse_ahead).lower()})
    try:
        if workers:
            poll(lambda: count(dsn, "SELECT count(*) FROM upload WHERE status = 'queued'") == 0,
                 300, "warm-up drained")  # fmt: skip
        before = count(dsn, "SELECT coalesce(max(id), 0) FROM upload")
        latencies: list[list[float]] = [[] for _ in range(args.clients)]
        # Written before the clock starts: in CI the test runner writes the report, on the
        # job's machine; the uploader only sends it.
        reports = [
            _reports(c, args.uploads, args.tests, args.known, args.gzip)
            for c in range(args.clients)
        ]
        threads = [
            threading.Thread(target=_send, args=(base, token, c, reports[c], lat))
            for c, lat in enumerate(latencies)
        ]
        cpu_before = _cpu_parts(api, [p.pid for p in procs], postmaster)
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
        send_s = time.perf_counter() - start
        sent = args.clients * args.uploads
        drain_s = None
        if workers:
            drained = time.perf_counter()
            poll(
                lambda: (
                    count(
                        dsn, "SELECT count(*) FROM upload WHERE id > %s AND status = 'done'", before
                    )
                    >= sent
                    and _compacted(dsn)
                ),
                1800,
                "drain",
            )
            drain_s = time.perf_counter() - drained
        cpu_after = _cpu_parts(api, [p.pid for p in procs], postmaster)
        cpu = {part: cpu_after[part] - cpu_before[part] for part in cpu_before}
        return Phase(
            workers, parse_ahead, sent, send_s, [x for lat in latencies for x in lat], drain_s, cpu
        )
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=30)
        with psycopg.connect(dsn, autocommit=True) as conn:
            # Leftover uploads of the no-worker phase must not count in the next phase's drain.
            conn.execute("UPDATE upload SET status = 'done' WHERE status = 'queued'")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clients", type=int, default=12)
    parser.add_argument("--uploads", type=int, default=10, help="per client")
    parser.add_argument("--tests", type=int, default=500, help="testcases per report")
    parser.add_argument(
        "--known",
        action="store_true",
        help="each client uploads its job's same suite every time (default: new tests each time)",
    )
    parser.add_argument(
        "--gzip",
        action="store_true",
        help="send each report gzipped, as `laptime-ci upload` and the plugin do (default: raw)",
    )
    parser.add_argument(
        "--phases",
        default="0,1,3",
        help="worker counts in order, the first 0 (the baseline); `1-`: without parse-ahead",
    )
    args = parser.parse_args()
    phase_names = args.phases.split(",")
    if phase_names[0] != "0" or not all(p.rstrip("-").isdigit() for p in phase_names):
        parser.error("--phases: worker counts such as 0,1-,1,3 (the first is 0)")

    with scratch_database() as (url, dsn):
        api, base = start_serve(url, "--no-worker")
        try:
            # Unmeasured warm-up: the first requests pay for imports and cold caches.
            _send(base, _token(url), 99, _reports(99, 3, args.tests, gzip=args.gzip), [])
            phases = [run_phase(url, dsn, base, n, args, api.pid) for n in phase_names]
        finally:
            api.send_signal(signal.SIGTERM)
            api.wait(timeout=30)
    baseline = phases[0]
    print(
        f"{args.clients} clients x {args.uploads} uploads of {args.tests} testcases "
        f"({baseline.sent} uploads per phase; "
        f"{'the same suite per client' if args.known else 'new tests in each'}"
        f"{', gzipped' if args.gzip else ''})"
    )
    for phase in phases:
        drain = "-" if phase.drain_s is None else f"{phase.drain_s:.1f} s"
        ingest = (
            "-"
            if phase.drain_s is None
            else f"{phase.sent / (phase.send_s + phase.drain_s):.1f} uploads/s end to end"
        )
        print(
            f"{phase.label}: {phase.rate:6.1f} uploads/s acknowledged "
            f"(x{phase.rate / baseline.rate:.2f} of no worker), latency p50 "
            f"{phase.p(50) * 1000:.0f} ms p95 {phase.p(95) * 1000:.0f} ms, drain {drain}, {ingest}"
        )
    cores = os.cpu_count() or 1
    for phase in phases:
        per = {part: seconds * 1000 / phase.sent for part, seconds in phase.cpu.items()}
        total = sum(per.values())
        parts = ", ".join(f"{part} {ms:.1f}" for part, ms in per.items())
        what = "accepted" if phase.workers == 0 else "accepted and ingested"
        print(
            f"{phase.label}: CPU ms per upload {what}: {parts}; total {total:.1f} ms, "
            f"so at most {cores * 1000 / total:.0f} uploads/s on this machine's {cores} cores"
        )
    ones = [p for p in phases if p.workers == 1 and p.parse_ahead]
    threes = [p for p in phases if p.workers == 3 and p.parse_ahead]
    if ones and threes:
        one, three = ones[0], threes[0]
        assert one.drain_s is not None
        assert three.drain_s is not None
        print(
            f"3 workers vs 1: end-to-end time x"
            f"{(three.send_s + three.drain_s) / (one.send_s + one.drain_s):.2f}"
        )


if __name__ == "__main__":
    main()
