"""Queue mode measured: the server's claim rate, the time a batch adds on the node, and the
pipeline wait of 2 queue nodes against the static plan's 2 shards (and pytest-split's 2
groups) on a real suite, each node pinned to its own core, then with a CPU competitor beside
node 1; and a budget below what the suite needs.

    .venv/bin/python -m bench.bench_queue [--suite pandas.tests.arithmetic] [--claimers 8,64]
        [--pytest-split DIR]

A real `laptime serve` (API + worker) on a scratch embedded Postgres. The suite is one shipped
in the venv (`pytest --pyargs`), not networkx (the planner was tuned on it) nor scikit-learn.
Its history is one full run uploaded by the plugin; every node is a real `pytest` process
(`taskset -c K`). Exactly-once is checked by nodeid from each node's laptime JSON report.
pytest-split runs only from DIR (`pip install --target DIR pytest-split`), put on those
nodes' path alone, its durations stored by the same history run (`--splitting-algorithm
least_duration`). The machine's load average is recorded before and after every pipeline.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text

from bench.common import scratch_database, start_serve

ROOT = Path(__file__).resolve().parents[1]


def project_tokens(url: str) -> tuple[str, str]:
    """A new project and an admin token for it (upload + read)."""
    from app.db.projects import create_project, create_token

    engine = create_engine(url)
    with engine.begin() as conn:
        project = create_project(conn, f"bench-{int(time.time() * 1000)}")
        token = create_token(conn, project, "admin")
    engine.dispose()
    return project.slug, token


def load_average() -> float:
    """The 1-minute load average (the machine is shared)."""
    return round(os.getloadavg()[0], 2)


def claim_rate(
    base: str, slug: str, token: str, claimers: int, tests: int, nodes: int = 1000
) -> dict[str, Any]:
    """`claimers` concurrent nodes claim and finish batches until a queue of `tests` is empty;
    the queue is planned for `nodes` nodes, so each claim takes one or two items, as when
    thousands of nodes pull: claims per second and the claim + finish round trip (what a
    batch adds on a node). The claimers are tasks of one event loop, not threads: 256 threads
    in one process would measure the benchmark's own GIL, not the server."""
    headers = {"Authorization": f"Bearer {token}"}
    api = f"{base}/api/v1/projects/{slug}/queues"
    collected = [f"t/test_{i // 10:04d}.py::test_{i}" for i in range(tests)]
    opened = httpx.post(
        api,
        json={
            "node": "0",
            "pipeline": f"rate-{time.time()}",
            "collected": collected,
            "nodes": nodes,
        },
        headers=headers,
        timeout=120,
    ).json()
    queue = opened["queue_id"]
    rounds: list[float] = []
    seen: Counter[str] = Counter()
    errors: Counter[str] = Counter()

    async def node(client: httpx.AsyncClient, name: str) -> None:
        while True:
            begun = time.perf_counter()
            try:
                answer = await client.post(f"{api}/{queue}/claims", json={"node": name})
            except httpx.HTTPError as exc:
                errors[type(exc).__name__] += 1
                return
            if answer.status_code != 200:
                errors[str(answer.status_code)] += 1
                return
            batch = answer.json()
            if batch["state"] == "wait" and batch["pending_items"]:
                await asyncio.sleep(batch["retry_after_s"])  # pending, locked by siblings
                continue
            if batch["state"] != "batch":
                return
            ids = [n for item in batch["items"] for n in item["nodeids"]]
            try:
                done = await client.post(
                    f"{api}/{queue}/claims/{batch['claim_id']}/finish",
                    json={"results": [{"nodeid": n, "duration_s": 0.0} for n in ids]},
                )
            except httpx.HTTPError as exc:
                errors[f"finish {type(exc).__name__}"] += 1
                return
            if done.status_code != 200:
                errors[f"finish {done.status_code}"] += 1
            rounds.append(time.perf_counter() - begun)
            seen.update(ids)

    async def pull() -> None:
        # A connection per call, as the client's urllib opens them: no idle connection for
        # the server to close just as it is reused.
        limits = httpx.Limits(max_connections=claimers, max_keepalive_connections=0)
        async with httpx.AsyncClient(headers=headers, timeout=120, limits=limits) as client:
            await asyncio.gather(*(node(client, str(i)) for i in range(claimers)))

    load = load_average()
    begun = time.perf_counter()
    asyncio.run(pull())
    elapsed = time.perf_counter() - begun
    ordered = sorted(rounds) or [0.0]
    return {
        "load_average": [load, load_average()],
        "claimers": claimers,
        "tests": tests,
        "claims": len(rounds),
        "claims_per_s": round(len(rounds) / elapsed, 1),
        "batch_round_trip_p50_ms": round(1000 * statistics.median(ordered), 1),
        "batch_round_trip_p95_ms": round(1000 * ordered[int(0.95 * len(ordered))], 1),
        "errors": dict(errors),
        "exactly_once": set(seen.values()) == {1} and len(seen) == tests,
    }


def pytest_node(
    suite: str, where: Path, cpu: int | None, env: dict[str, str], *args: str, report: Path
) -> subprocess.Popen[str]:
    """A real pytest process over the suite (with BENCH_PYTEST_ARGS), pinned to `cpu`."""
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    argv = [
        *pin,
        sys.executable,
        "-m",
        "pytest",
        "--pyargs",
        suite,
        "-q",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        f"--laptime-report={report}",
        *shlex.split(env.get("BENCH_PYTEST_ARGS", "")),
        *args,
    ]
    return subprocess.Popen(
        argv, cwd=where, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def ran_in(report: Path) -> list[str]:
    """Nodeids a node's laptime JSON report holds."""
    return [t["nodeid"] for t in json.loads(report.read_text())["tests"]]


def pipeline(
    suite: str,
    where: Path,
    env: dict[str, str],
    mode: str,
    tag: str,
    slow: str | None,
    split_dir: str | None = None,
    nodes: int = 2,
    wait_factor: float = 1.0,
) -> dict[str, Any]:
    """`nodes` nodes at once (node K on core (K-1) mod cores), static shards, pytest-split
    groups or queue; their walls, and for the queue the server's own record of each node's
    last batch. `slow`: node 1 slowed by a CPU competitor pinned beside it (`cpu`), or by
    sleeping as long again after each test (`sleep`: exactly half speed whatever else the
    shared machine runs). `wait_factor` > 1: every node's tests wait (sleep) that many times
    their own time in all, so more nodes than cores still run side by side (a waiting suite)."""
    load_before = load_average()
    cores = os.cpu_count() or 1
    hog = None
    if slow == "cpu":
        hog = subprocess.Popen(["taskset", "-c", "0", sys.executable, "-c", "while True: pass"])
    try:
        procs, reports, starts = [], [], []
        for k in range(1, nodes + 1):
            report = where / f"{tag}-{k}.json"
            node_env = {**env, "LAPTIME_PIPELINE": tag, "LAPTIME_JOB_STARTED_AT": str(time.time())}
            if mode == "split":
                node_env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], split_dir or ""])
                flags = [f"--splits={nodes}", f"--group={k}",
                         "--splitting-algorithm=least_duration",
                         f"--durations-path={where / 'split-durations.json'}"]  # fmt: skip
            else:
                flags = [f"--laptime-{mode}={k}/{nodes}"]
            factor = wait_factor * (2 if slow == "sleep" and k == 1 else 1)
            if factor > 1:
                node_env["BENCH_SLOW_FACTOR"] = str(factor)
                flags.append("-pbench.slow_node")
                node_env["PYTHONPATH"] = os.pathsep.join([node_env["PYTHONPATH"], str(ROOT)])
            starts.append(time.monotonic())
            core = (k - 1) % cores
            procs.append(pytest_node(suite, where, core, node_env, *flags, report=report))
            reports.append(report)
        walls: list[float] = [0.0] * nodes
        outputs: list[list[str]] = [[] for _ in range(nodes)]

        def wait(k: int) -> None:
            out, _ = procs[k].communicate(timeout=3600)
            walls[k] = time.monotonic() - starts[k]  # this node's own end
            outputs[k] = out.splitlines()[-3:]

        waiters = [threading.Thread(target=wait, args=(k,)) for k in range(nodes)]
        for t in waiters:
            t.start()
        for t in waiters:
            t.join()
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
    counts = Counter(n for r in reports for n in ran_in(r))
    row = {
        "mode": mode,
        "nodes": nodes,
        "wait_factor": wait_factor,
        "slow": slow,
        "load_average": [load_before, load_average()],
        "node_walls_s": [round(w, 1) for w in walls],
        "wait_s": round(max(walls), 1),
        "idle_tail_s": round(max(walls) - min(walls), 1),
        "tests": len(counts),
        "ran_twice": sum(1 for c in counts.values() if c > 1),
        "tails": outputs,
    }
    if mode == "queue":
        row.update(queue_record(env, tag))
    return row


def history_ingested(url: str, begun: float, timeout_s: float = 600) -> float:
    """Seconds until every upload is ingested and a run is stored (the worker's work)."""
    engine = create_engine(url)
    try:
        while True:
            with engine.connect() as conn:
                left, stored = conn.execute(
                    text(
                        "SELECT (SELECT count(*) FROM upload WHERE status <> 'done'),"
                        " (SELECT count(*) FROM run)"
                    )
                ).one()
            if not left and stored:
                return round(time.monotonic() - begun, 1)
            if time.monotonic() - begun > timeout_s:
                raise RuntimeError(f"the history was not ingested in {timeout_s} s")
            time.sleep(0.2)  # another process's progress, not a timing
    finally:
        engine.dispose()


def queue_record(env: dict[str, str], pipeline: str) -> dict[str, Any]:
    """The server's record of a queue: each node's last batch done (its idle tail is what a
    waiting node's wall hides), batches and take-overs per node, tests twice or nowhere."""
    headers = {"Authorization": f"Bearer {env['LAPTIME_TOKEN']}"}
    base = f"{env['LAPTIME_URL']}/api/v1/projects/{env['LAPTIME_PROJECT']}/queues"
    status = httpx.get(
        f"{base}/pipeline", params={"pipeline": pipeline}, headers=headers, timeout=60
    ).json()
    engine = create_engine(env["BENCH_DATABASE_URL"])
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT e.node, count(*) FROM work_queue_event e WHERE e.queue_id = :q"
                " AND e.kind = 'take-over' GROUP BY e.node"
            ),
            {"q": status["queue_id"]},
        ).all()
        # Every event, seconds from the queue's opening: what each node claimed, passed,
        # began, finished or waited for (the idle tail's story).
        events = conn.execute(
            text(
                "SELECT e.node, e.kind, e.claim_id,"
                " round(extract(epoch FROM e.at - q.created_at)::numeric, 2), e.detail"
                " FROM work_queue_event e JOIN work_queue q ON q.id = e.queue_id"
                " WHERE e.queue_id = :q ORDER BY e.id"
            ),
            {"q": status["queue_id"]},
        ).all()
    taken = {str(r[0]): int(r[1]) for r in rows}
    engine.dispose()
    return {
        "server_wait_s": status["wait_s"],
        "server_idle_tail_s": status["idle_tail_s"],
        "batches": {n["node"]: len(n["batches"]) for n in status["nodes"]},
        "take_overs": taken,
        "server_ran_twice": len(status["ran_twice"]),
        "server_never_ran": len(status["never_ran"]),
        "timeline": [[str(r[0]), str(r[1]), r[2], float(r[3]), _brief(r[4])] for r in events],
    }


def _brief(detail: dict[str, Any]) -> dict[str, Any]:
    """An event's detail without the names of what a budget stop left (thousands)."""
    return {k: v for k, v in detail.items() if k != "not_run"}


def budget_run(
    suite: str,
    where: Path,
    env: dict[str, str],
    single_process_s: float,
    history: list[str],
    base: str,
    slug: str,
    token: str,
) -> dict[str, Any]:
    """A budget below what the suite needs: one node, half the single-process wall; whether
    it stopped before its limit and named exactly the tests it did not run."""
    budget = single_process_s / 2
    begun = time.monotonic()
    node_env = {**env, "LAPTIME_PIPELINE": "budget", "LAPTIME_JOB_STARTED_AT": str(time.time())}
    proc = pytest_node(
        suite,
        where,
        0,
        node_env,
        "--laptime-queue=1/1",
        f"--laptime-budget={budget}",
        report=where / "budget.json",
    )
    proc.communicate(timeout=3600)
    wall = time.monotonic() - begun
    status = httpx.get(
        f"{base}/api/v1/projects/{slug}/queues/pipeline",
        params={"pipeline": "budget"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    ).json()
    ran = set(ran_in(where / "budget.json"))
    row = {
        "load_average": load_average(),
        "budget_s": round(budget, 1),
        "wall_s": round(wall, 1),
        "stopped_before_limit": wall < budget,
        "exit_code": proc.returncode,
        "ran": len(ran),
        "never_ran": len(status["never_ran"]),
        "named_exactly": set(status["never_ran"]) == set(history) - ran,
    }
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--suite", default="pandas.tests.arithmetic")
    parser.add_argument("--claimers", default="8", help="comma-separated: one run per count")
    parser.add_argument(
        "--pytest-split", default=None, help="a directory pytest-split was pip-installed into"
    )
    parser.add_argument("--skip-pipelines", action="store_true", help="claim rates only")
    parser.add_argument(
        "--slow", default="cpu,sleep", help="how node 1 is slowed in the slow cases: cpu, sleep"
    )
    parser.add_argument("--claim-tests", type=int, default=3000)
    parser.add_argument("--nodes", default="2", help="comma-separated node counts, one round each")
    parser.add_argument(
        "--wait-factor",
        type=float,
        default=1.0,
        help="each test (history and nodes) takes this many times its time, the rest asleep",
    )
    parser.add_argument("--skip-budget", action="store_true", help="no budget run")
    parser.add_argument(
        "--pytest-args", default="", help="more pytest arguments for every run (part of a suite)"
    )
    parser.add_argument("--out", default=None, help="write the JSON result here too")
    args = parser.parse_args()
    results: dict[str, Any] = {"suite": args.suite, "wait_factor": args.wait_factor}
    counts = [int(n) for n in args.nodes.split(",")]
    with scratch_database() as (url, _dsn):
        serve, base = start_serve(url)
        try:
            slug, token = project_tokens(url)
            results["claims"] = []
            for claimers in (int(c) for c in args.claimers.split(",")):
                rate = claim_rate(base, slug, token, claimers, args.claim_tests)
                results["claims"].append(rate)
                print(json.dumps(rate), flush=True)
            if args.skip_pipelines:
                return
            where = Path(tempfile.mkdtemp(prefix="laptime-bench-queue-"))
            env = {k: v for k, v in os.environ.items() if not k.startswith(("LAPTIME_", "CI"))}
            root = Path(__file__).resolve().parents[1]
            env.update(
                {
                    "PYTHONPATH": os.pathsep.join([str(root), str(root / "client")]),
                    "LAPTIME_URL": base,
                    "LAPTIME_TOKEN": token,
                    "LAPTIME_PROJECT": slug,
                    "LAPTIME_READ_TOKEN": token,
                    "BENCH_DATABASE_URL": url,
                    "BENCH_PYTEST_ARGS": args.pytest_args,
                }
            )
            split_dir = args.pytest_split
            split_flags = (
                ["--store-durations", f"--durations-path={where / 'split-durations.json'}"]
                if split_dir
                else []
            )
            # History: one full run, uploaded by the plugin.
            begun = time.monotonic()
            history_env = {**env, "LAPTIME_PIPELINE": "history"}
            if split_dir:
                history_env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], split_dir])
            waits = []
            if args.wait_factor > 1:
                history_env["BENCH_SLOW_FACTOR"] = str(args.wait_factor)
                history_env["PYTHONPATH"] = os.pathsep.join([history_env["PYTHONPATH"], str(ROOT)])
                waits = ["-pbench.slow_node"]
            full = pytest_node(
                args.suite,
                where,
                None,
                history_env,
                "--laptime-upload",
                *split_flags,
                *waits,
                report=where / "history.json",
            )
            full.communicate(timeout=3600)
            results["single_process_s"] = round(time.monotonic() - begun, 1)
            history = ran_in(where / "history.json")
            results["suite_tests"] = len(history)
            # The static plan asks for its shards at once: the history must be stored by then
            # (a fixed pause lost that race under load and the server planned without it).
            results["history_ingest_s"] = history_ingested(url, time.monotonic())
            modes = ("shard", "split", "queue") if split_dir else ("shard", "queue")
            cases = {"equal": None, **{f"slow-{how}": how for how in args.slow.split(",") if how}}
            # Each round's tag names its node count unless it is the 2-node default alone.
            rounds = [("" if counts == [2] else f"n{n}-", n) for n in counts]
            for prefix, n in rounds:
                for case, slow in cases.items():
                    for mode in modes:
                        tag = f"{mode}-{prefix}{case}"
                        row = pipeline(
                            args.suite, where, env, mode, tag, slow, split_dir, n, args.wait_factor
                        )
                        row["exactly_once"] = (
                            row["tests"] == len(set(history)) and not row["ran_twice"]
                        )
                        results[tag] = row
                        print(json.dumps(row), flush=True)
            results["queue_vs"] = {
                f"{other} {prefix}{case}": round(
                    results[f"queue-{prefix}{case}"]["wait_s"]
                    / results[f"{other}-{prefix}{case}"]["wait_s"],
                    2,
                )
                for prefix, _n in rounds
                for other in modes
                if other != "queue"
                for case in cases
            }
            print(json.dumps(results["queue_vs"]), flush=True)
            if not args.skip_budget:
                results["budget"] = budget_run(
                    args.suite, where, env, results["single_process_s"], history, base, slug, token
                )
        finally:
            serve.terminate()
            serve.wait(timeout=30)
    print(json.dumps(results, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
