"""The per-test rollups are added after the ingest (ingest.rollup_compaction): reads are exact
before, between and after compactions, the tables end equal to a recomputation from the stored
results, and concurrent compactors add every run exactly once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta

import numpy as np
import pandas as pd
import psycopg
import pytest
from sqlalchemy import Engine, text

from analysis.filters import Filters
from app.db.digest_reads import weekly_test_sums
from app.db.engine import make_engine
from app.db.rollup_reads import load_fact_sums, pending_runs
from ingest.merge import merge_reports
from ingest.model import ParsedReport, results_frame
from ingest.rollup_compaction import compact_backlog, compact_project, pending_facts
from ingest.store import RunMetadata, store_run
from tests.conftest import compact_rollups, make_project
from tests.server.conftest import sqlalchemy_to_dsn

MONDAY = date(2020, 3, 2)
VALUES = "runs, known, total_s, max_s, setup_s, call_s, teardown_s, failures, flaky, peak_rss_mib"


def _report(rng: np.random.Generator, tests: int) -> ParsedReport:
    n = tests
    duration = rng.integers(1, 400, n) / 64.0  # binary fractions: sums exact in any order
    unknown = rng.random(n) < 0.15
    return ParsedReport(
        format="junit",
        results=results_frame(
            {
                "nodeid": [f"d{i % 3}/t_{i % 7}.py::test_{i}" for i in range(n)],
                "file": [f"d{i % 3}/t_{i % 7}.py" for i in range(n)],
                "function": [f"test_{i}" for i in range(n)],
                "outcome": rng.choice(["passed", "failed", "error", "skipped"], n).tolist(),
                "duration_s": np.where(unknown, np.nan, duration),
                "setup_s": np.where(rng.random(n) < 0.5, np.nan, duration / 4),
                # Some rows carry a message: they take the text COPY path.
                "message": [("boom\t" + str(i)) if i % 11 == 0 else None for i in range(n)],
            }
        ),
    )


def _store(
    dsn: str, project_id: int, day: date, job: str, seed: int, tests: int | None = None
) -> None:
    rng = np.random.default_rng(seed)
    with psycopg.connect(dsn) as conn:
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
            "RETURNING id",
            (project_id, f"{day}{job}{seed}".encode()),
        ).fetchone()[0]  # type: ignore[index]
        store_run(
            conn,
            project_id=project_id,
            upload_id=upload_id,
            meta=RunMetadata(job=job, started_at=datetime.combine(day, time(9), UTC)),
            merged=merge_reports([_report(rng, tests or int(rng.integers(20, 60)))]),
        )
        conn.commit()


def _recomputed(engine: Engine, project_id: int) -> dict[str, list[tuple[object, ...]]]:
    """Each per-test rollup as the sums of the stored results, read straight from test_result."""
    facts = (
        "SELECT t.day, date_trunc('week', t.day)::date AS week, u.cell_id, t.test_id, "
        "1 AS runs, (t.duration_s IS NOT NULL)::int AS known, coalesce(t.duration_s, 0) "
        "AS total_s, t.duration_s AS max_s, t.setup_s, t.call_s, t.teardown_s, "
        "(t.outcome IN ('failed', 'error'))::int AS failures, t.flaky::int AS flaky, "
        "t.peak_rss_mib FROM test_result t JOIN run u ON u.id = t.run_id "
        "WHERE t.project_id = :p"
    )
    sums = (
        "sum(runs), sum(known), sum(total_s), max(max_s), sum(setup_s), sum(call_s), "
        "sum(teardown_s), sum(failures), sum(flaky), max(peak_rss_mib)"
    )
    queries = {
        "rollup_daily": f"SELECT day, cell_id, test_id, {sums} FROM ({facts}) f GROUP BY 1, 2, 3",
        "rollup_cell_weekly": (
            f"SELECT week, cell_id, test_id, {sums} FROM ({facts}) f GROUP BY 1, 2, 3"
        ),
        "rollup_test_weekly": f"SELECT week, test_id, {sums} FROM ({facts}) f GROUP BY 1, 2",
    }
    with engine.connect() as conn:
        return {
            table: sorted(tuple(r) for r in conn.execute(text(q), {"p": project_id}).all())
            for table, q in queries.items()
        }


def _tables(engine: Engine, project_id: int) -> dict[str, list[tuple[object, ...]]]:
    keys = {
        "rollup_daily": "day, cell_id, test_id",
        "rollup_cell_weekly": "week, cell_id, test_id",
        "rollup_test_weekly": "week, test_id",
    }
    with engine.connect() as conn:
        return {
            table: sorted(
                tuple(r)
                for r in conn.execute(
                    text(f"SELECT {k}, {VALUES} FROM {table} WHERE project_id = :p"),
                    {"p": project_id},
                ).all()
            )
            for table, k in keys.items()
        }


def _file_rollup_recomputed(engine: Engine, project_id: int) -> tuple[list[object], list[object]]:
    """rollup_file_daily (written by the ingest, from per-file sums taken in numpy) and the
    same sums read straight from the results and their tests' files."""
    per_run = (
        "SELECT t.day, u.cell_id, coalesce(c.file, '(unknown)') AS file, count(*) AS tests, "
        "count(t.duration_s) AS known, coalesce(sum(t.duration_s), 0) AS total_s, "
        "max(t.duration_s) AS max_s, sum(t.setup_s) AS setup_s, "
        "count(*) FILTER (WHERE t.outcome IN ('failed', 'error')) AS failures "
        "FROM test_result t JOIN run u ON u.id = t.run_id JOIN test_case c ON c.id = t.test_id "
        "WHERE t.project_id = :p GROUP BY t.day, u.cell_id, t.run_id, 3"
    )
    with engine.connect() as conn:
        stored = conn.execute(
            text(
                "SELECT day, cell_id, file, tests, runs, known, total_s, max_s, setup_s, failures "
                "FROM rollup_file_daily WHERE project_id = :p ORDER BY 1, 2, 3"
            ),
            {"p": project_id},
        ).all()
        again = conn.execute(
            text(
                f"SELECT day, cell_id, file, max(tests), sum(tests), sum(known), sum(total_s), "
                f"max(max_s), sum(setup_s), sum(failures) FROM ({per_run}) r "
                "GROUP BY 1, 2, 3 ORDER BY 1, 2, 3"
            ),
            {"p": project_id},
        ).all()
    return [tuple(r) for r in stored], [tuple(r) for r in again]


def _reads(engine: Engine, project_id: int) -> list[pd.DataFrame]:
    """Every shape of per-test read: daily window, weekly window (the per-test weekly table),
    per (test, job) with partial edge weeks, and the digest's weekly sums."""
    short = Filters(since=MONDAY + timedelta(days=1), until=MONDAY + timedelta(days=9))
    long = Filters(since=MONDAY, until=MONDAY + timedelta(days=27))
    edges = Filters(since=MONDAY + timedelta(days=2), until=MONDAY + timedelta(days=22))
    weeks = [MONDAY + timedelta(days=7 * k) for k in range(4)]
    with engine.connect() as conn:
        frames = [
            load_fact_sums(conn, project_id, short),
            load_fact_sums(conn, project_id, long),
            load_fact_sums(conn, project_id, edges, split_by=("job",), per_bucket=False),
            weekly_test_sums(conn, project_id, weeks),
        ]
    out = []
    for frame in frames:
        frame = frame.astype({c: str for c in ("job", "day", "week") if c in frame})
        keys = [c for c in ("test_id", "name", "day", "week", "job") if c in frame]
        out.append(frame.sort_values(keys).reset_index(drop=True))
    return out


def _pending(engine: Engine, project_id: int) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text("SELECT count(*) FROM run WHERE project_id = :p AND NOT compacted"),
                {"p": project_id},
            ).scalar_one()
        )


def _assert_same_reads(before: list[pd.DataFrame], after: list[pd.DataFrame]) -> None:
    for left, right in zip(before, after, strict=True):
        pd.testing.assert_frame_equal(left, right, check_dtype=False, check_categorical=False)


@pytest.fixture
def own_db(private_db: str) -> Iterator[tuple[str, Engine]]:
    """(libpq dsn, engine) of a database of its own: no live server's worker compacts its runs
    behind the test's back."""
    engine = make_engine(private_db, pool_size=2)
    try:
        yield sqlalchemy_to_dsn(private_db), engine
    finally:
        engine.dispose()


def test_reads_are_exact_before_between_and_after_compactions(
    own_db: tuple[str, Engine],
) -> None:
    dsn, engine = own_db
    project = make_project(engine)
    # Four weeks, two jobs, several runs of one cell on one day.
    plan = [(d, job) for d in (0, 1, 1, 3, 8, 9, 15, 16, 16, 22, 26) for job in ("a", "b")]
    for seed, (offset, job) in enumerate(plan[:12]):
        _store(dsn, project.id, MONDAY + timedelta(days=offset), job, seed)
    assert _pending(engine, project.id) == 12
    assert all(not rows for rows in _tables(engine, project.id).values())
    uncompacted = _reads(engine, project.id)
    assert len(uncompacted[1]) > 20

    # Compact a part: some runs in the rollups, the rest read from their results.
    with psycopg.connect(dsn) as conn:
        assert compact_project(conn, project.id, max_runs=5).runs == 5
    _assert_same_reads(uncompacted, _reads(engine, project.id))
    assert compact_rollups(dsn, project.id) == 7
    assert _pending(engine, project.id) == 0
    _assert_same_reads(uncompacted, _reads(engine, project.id))
    assert _tables(engine, project.id) == _recomputed(engine, project.id)

    # Later runs land on rows the compaction already wrote (same days, weeks and tests).
    for seed, (offset, job) in enumerate(plan[12:], start=100):
        _store(dsn, project.id, MONDAY + timedelta(days=offset), job, seed)
    mixed = _reads(engine, project.id)
    assert compact_rollups(dsn, project.id) == len(plan) - 12
    _assert_same_reads(mixed, _reads(engine, project.id))
    assert _tables(engine, project.id) == _recomputed(engine, project.id)
    stored, again = _file_rollup_recomputed(engine, project.id)
    assert len(stored) > 20
    assert [r[:6] + r[9:] for r in stored] == [r[:6] + r[9:] for r in again]
    for left, right in zip(stored, again, strict=True):  # float sums: any order of addition
        for a, b in zip(left[6:9], right[6:9], strict=True):
            assert (a is None and b is None) or a == pytest.approx(b, rel=1e-12), (left, right)
    assert any(r[8] is None for r in stored)  # a file no result reported setup for
    assert any(r[8] is not None for r in stored)
    # The stored results are the independent reading: the reads are not all empty.
    assert sum(r[2] for r in _tables(engine, project.id)["rollup_test_weekly"]) == sum(  # type: ignore[misc]
        r[2]
        for r in _recomputed(engine, project.id)["rollup_test_weekly"]  # type: ignore[misc]
    )


def test_concurrent_compactors_add_every_run_exactly_once(own_db: tuple[str, Engine]) -> None:
    dsn, engine = own_db
    project = make_project(engine)
    for seed in range(40):
        _store(dsn, project.id, MONDAY + timedelta(days=seed % 10), "j", seed)
    errors: list[BaseException] = []

    def compact() -> None:
        try:
            with psycopg.connect(dsn) as conn:
                while compact_backlog(conn, projects=[project.id]).busy:
                    pass  # another compactor holds the project: take what it leaves
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=compact) for _ in range(4)]
    # Runs stored while the compactors run are compacted by one of them or left pending.
    for thread in threads:
        thread.start()
    for seed in range(40, 48):
        _store(dsn, project.id, MONDAY + timedelta(days=seed % 10), "j", seed)
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    compact_rollups(dsn, project.id)
    assert _pending(engine, project.id) == 0
    with engine.connect() as conn:
        results = conn.execute(
            text("SELECT count(*) FROM test_result WHERE project_id = :p"), {"p": project.id}
        ).scalar_one()
        runs = conn.execute(
            text("SELECT sum(runs) FROM rollup_test_weekly WHERE project_id = :p"),
            {"p": project.id},
        ).scalar_one()
    assert runs == results > 0
    assert _tables(engine, project.id) == _recomputed(engine, project.id)


def _pending_tests(engine: Engine, project_id: int) -> list[int]:
    with engine.connect() as conn:
        return [
            int(n)
            for (n,) in conn.execute(
                text("SELECT tests FROM run WHERE project_id = :p AND NOT compacted ORDER BY id"),
                {"p": project_id},
            )
        ]


def test_a_pass_takes_runs_up_to_its_results_budget_and_the_backlog_takes_every_pass(
    own_db: tuple[str, Engine],
) -> None:
    # Many runs of a small suite fold into a pass together; a suite of 100,000 tests makes a
    # pass of one run: a pass's size (and how long it holds its locks) follows its results.
    dsn, engine = own_db
    project = make_project(engine)
    for seed in range(9):
        _store(dsn, project.id, MONDAY + timedelta(days=seed % 3), "j", seed)
    sizes = _pending_tests(engine, project.id)
    budget = sizes[0] + sizes[1] + sizes[2] // 2  # two runs fit, the third does not
    with psycopg.connect(dsn) as conn:
        first = compact_project(conn, project.id, max_results=budget)
        assert (first.runs, first.more) == (2, True)
        # A run larger than the budget still makes a pass alone.
        alone = compact_project(conn, project.id, max_results=1)
        assert (alone.runs, alone.more) == (1, True)
        rest = compact_backlog(conn, projects=[project.id], max_results=budget)
    assert rest.runs == 6
    assert not rest.more
    assert _pending(engine, project.id) == 0
    assert _tables(engine, project.id) == _recomputed(engine, project.id)


def _plan_nodes(
    node: dict[str, object], parents: tuple[str, ...] = ()
) -> Iterator[tuple[dict[str, object], tuple[str, ...]]]:
    """Every node of an EXPLAIN (FORMAT JSON) plan, with the relationships above it."""
    here = (*parents, str(node.get("Parent Relationship", "")))
    yield node, here
    for child in node.get("Plans", []):  # type: ignore[attr-defined]
        yield from _plan_nodes(child, here)


def test_pending_facts_read_the_pending_runs_once_not_per_result(
    own_db: tuple[str, Engine],
) -> None:
    """The runs still pending are looked up once per statement. Joined, on a fresh day's
    partition nobody had analyzed, the run table was scanned again for every result (a nested
    loop: 1.1 s for 28,576 results of 32 pending runs)."""
    dsn, engine = own_db
    project = make_project(engine)
    for seed in range(32):
        _store(dsn, project.id, MONDAY, f"job{seed % 4}", seed)
    with engine.connect() as conn:
        pending = pending_runs(conn, project.id)
    assert len(pending.ids) == 32
    sql = pending_facts(
        "%(pending_runs)s::int8[]", "%(pending_days)s::date[]", "%(pending_cells)s::int8[]"
    )
    with psycopg.connect(dsn) as conn:
        (plan,) = conn.execute(f"EXPLAIN (FORMAT JSON) {sql}", pending.params()).fetchone()  # type: ignore[misc]
        facts = conn.execute(f"SELECT count(*) FROM ({sql}) f", pending.params()).fetchone()
        stored = conn.execute(
            "SELECT count(*) FROM test_result WHERE project_id = %s", (project.id,)
        ).fetchone()
    assert facts == stored
    run_scans = [
        parents
        for node, parents in _plan_nodes(plan[0]["Plan"])
        if node.get("Relation Name") == "run"
    ]
    assert run_scans, plan
    for parents in run_scans:
        assert "InitPlan" in parents, plan


def _blocks_read(dsn: str, table: str) -> int:
    """Heap blocks of `table` read so far, from memory or disk (the statistics flushed)."""
    with psycopg.connect(dsn) as conn:
        row = conn.execute(
            "SELECT coalesce(heap_blks_hit, 0) + coalesce(heap_blks_read, 0) "
            "FROM pg_statio_user_tables WHERE relname = %s",
            (table,),
        ).fetchone()
    return int(row[0]) if row else 0


def test_a_pass_and_a_reader_read_the_block_ranges_of_their_runs_not_the_whole_day(
    own_db: tuple[str, Engine],
) -> None:
    """The day's partition fills while passes compact it: its block range index had no
    summary of the new ranges (nothing summarizes them while a partition fills) and the
    planner no statistics, so every pass read the whole day, and so did every reader adding
    a pending run to the rollups (bench/bench_compaction_growth.py: 3.9x the ms per run
    compacted and 9.6x the reader's at 2M results that day as at 128,000)."""
    dsn, engine = own_db
    project = make_project(engine)
    for seed in range(40):
        _store(dsn, project.id, MONDAY, f"job{seed % 4}", seed, tests=2_500)
    with psycopg.connect(dsn) as conn:
        assert compact_backlog(conn).runs == 40
    partition = f"test_result_{MONDAY:%Y%m%d}"
    with psycopg.connect(dsn) as conn:
        pages = conn.execute("SELECT pg_relation_size(%s) / 8192", (partition,)).fetchone()
    assert pages is not None
    assert pages[0] > 1_000  # ranges of 128 blocks: a day of several

    _store(dsn, project.id, MONDAY, "late", 99, tests=2_500)
    # A reader adds the pending run's results to the rollups: its ranges, not the day.
    with engine.connect() as conn:
        pending = pending_runs(conn, project.id)
    assert len(pending.ids) == 1
    sql = pending_facts(
        "%(pending_runs)s::int8[]", "%(pending_days)s::date[]", "%(pending_cells)s::int8[]"
    )
    before = _blocks_read(dsn, partition)
    with psycopg.connect(dsn) as conn:
        facts = conn.execute(f"SELECT count(*) FROM ({sql}) f", pending.params()).fetchone()
        conn.execute("SELECT pg_stat_force_next_flush()")
    assert facts == (2_500,)
    assert 0 < _blocks_read(dsn, partition) - before < pages[0] / 4

    before = _blocks_read(dsn, partition)
    with psycopg.connect(dsn) as conn:
        assert compact_backlog(conn).runs == 1
        conn.execute("SELECT pg_stat_force_next_flush()")
    read = _blocks_read(dsn, partition) - before
    # The new run's blocks and the range they share with the run before, not the day.
    assert 0 < read < pages[0] / 4
    assert _tables(engine, project.id) == _recomputed(engine, project.id)
