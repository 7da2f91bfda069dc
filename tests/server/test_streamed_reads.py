"""Reads stream their rows: a project whose test dictionary is larger than one PostgreSQL value
may hold (1 GB) still reads, and the streamed frames equal those of the one-value reads.

The cap is scaled down by copy_frames.MAX_VALUE_BYTES: the old reads built each read as ONE
value (a string_agg of CSV lines, or one array per column), kept below as `_one_value_*` and
held to the same cap, so they trip where the streamed reads, one row per message, do not.
"""

from __future__ import annotations

import io
from datetime import UTC, date, datetime, time, timedelta

import numpy as np
import pandas as pd
import psycopg
import pytest
from psycopg import sql
from sqlalchemy import Connection, Engine

from analysis.filters import Filters
from app.db import copy_frames
from app.db.copy_frames import ValueTooLarge, copy_frame
from app.db.repository import load_run_results, load_test_dictionary, run_days
from app.db.rollup_reads import FactPart, load_fact_sums, load_file_facts
from ingest.merge import merge_reports
from ingest.model import ParsedReport, results_frame
from ingest.store import RunMetadata, store_run
from tests.conftest import Database, ProjectFixture

DAY = date(2021, 3, 3)  # a Wednesday, far from other tests' days
TESTS = 400
# Long, awkward names (quotes, commas, a newline, non-ASCII): ~700 bytes per test case row.
NAME = 'k"ey,with\nnewline ü ' + "x" * 300


def _store_project(database: Database, project: ProjectFixture) -> list[str]:
    """Two days of two jobs over TESTS long-named tests; the nodeids."""
    nodeids = [f"tests/test_{i % 7}.py::test_{i}[{NAME}]" for i in range(TESTS)]
    for offset, job in ((0, "linux"), (1, "mac"), (8, "linux")):
        report = ParsedReport(
            format="junit",
            results=results_frame(
                {
                    "nodeid": nodeids,
                    "file": [n.split("::")[0] for n in nodeids],
                    "function": [n.split("::")[1] for n in nodeids],
                    "outcome": ["passed" if i % 5 else "failed" for i in range(TESTS)],
                    "duration_s": [0.25 * (i % 9) + offset for i in range(TESTS)],
                }
            ),
        )
        with psycopg.connect(database.dsn) as conn:
            upload_id = conn.execute(
                "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
                "RETURNING id",
                (project.id, f"{project.id}-{offset}-{job}".encode()),
            ).fetchone()[0]  # type: ignore[index]
            store_run(
                conn,
                project_id=project.id,
                upload_id=upload_id,
                meta=RunMetadata(
                    job=job,
                    branch="main",
                    labels={"os": job},
                    started_at=datetime.combine(DAY + timedelta(days=offset), time(12), UTC),
                ),
                merged=merge_reports([report]),
            )
            conn.commit()
    return nodeids


def _one_value_frame(
    conn: Connection, query: str, params: dict[str, object], cap: int, dtypes: dict[str, str]
) -> pd.DataFrame:
    """The old read: the whole result as ONE CSV text value, refused over `cap` bytes as
    PostgreSQL refuses a value over 1 GB."""
    raw = conn.connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    probe = raw.execute(sql.SQL("SELECT * FROM ({}) q LIMIT 0").format(sql.SQL(query)), params)  # type: ignore[arg-type]
    assert probe.description is not None
    fields = []
    for column in probe.description:
        ident = sql.Identifier("q", column.name)
        if column.type_code in (25, 1043):
            fields.append(
                sql.SQL("""coalesce('"' || replace({0}, '"', '""') || '"', '')""").format(ident)
            )
        else:
            fields.append(sql.SQL("coalesce({}::text, '')").format(ident))
    row = raw.execute(
        sql.SQL("SELECT string_agg({}, E'\\n') FROM ({}) q").format(
            sql.SQL(" || ',' || ").join(fields),
            sql.SQL(query),  # type: ignore[arg-type]
        ),
        params,
    ).fetchone()
    body = row[0] if row and row[0] else ""
    if len(body.encode()) > cap:
        raise ValueTooLarge(f"one value of {len(body.encode()):,} bytes")
    names = ",".join(column.name for column in probe.description)
    return pd.read_csv(
        io.StringIO(names + "\n" + body), dtype=dtypes, keep_default_na=False, na_values=[""]
    )


DICTIONARY = """
    SELECT id AS test_id, nodeid, file, classname, function, params, param_values::text
        AS param_values
    FROM test_case WHERE project_id = %(p)s ORDER BY id
"""
TEXTS = dict.fromkeys(
    ("nodeid", "file", "classname", "function", "params", "param_values"), "object"
)


def test_a_dictionary_larger_than_one_value_streams_where_one_value_trips(
    database: Database, engine: Engine, project: ProjectFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    nodeids = _store_project(database, project)
    cap = 64 * 1024  # PostgreSQL's 1 GB, scaled down: the dictionary is ~4x larger
    with engine.connect() as conn:
        whole = _one_value_frame(conn, DICTIONARY, {"p": project.id}, 1 << 30, TEXTS)
        assert len(whole["nodeid"].str.cat().encode()) > 2 * cap
        with pytest.raises(ValueTooLarge):
            _one_value_frame(conn, DICTIONARY, {"p": project.id}, cap, TEXTS)

        uncapped = load_test_dictionary(conn, project.id)
        monkeypatch.setattr(copy_frames, "MAX_VALUE_BYTES", cap)
        streamed = copy_frame(conn, sql.SQL(DICTIONARY), {"p": project.id}, dtypes=TEXTS)
        pd.testing.assert_frame_equal(streamed, whole)
        tests = load_test_dictionary(conn, project.id)
        assert sorted(tests["nodeid"]) == sorted(nodeids)
        pd.testing.assert_frame_equal(tests, uncapped)

        # The cap is held per row received: a cap below one row's size stops the read.
        monkeypatch.setattr(copy_frames, "MAX_VALUE_BYTES", 200)
        with pytest.raises(ValueTooLarge):
            load_test_dictionary(conn, project.id)


def test_numeric_reads_stream_where_one_array_per_column_trips(
    database: Database, engine: Engine, project: ProjectFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    _store_project(database, project)
    cap = 2048  # one int8 array of TESTS ids is ~5 KB; one row of results ~150 bytes
    with engine.connect() as conn:
        runs = conn.exec_driver_sql(
            "SELECT id FROM run WHERE project_id = %(p)s ORDER BY id", {"p": project.id}
        ).scalars()
        days = run_days(conn, project.id, list(runs))
        whole = load_run_results(conn, project.id, days)
        one_array = conn.exec_driver_sql(
            "SELECT octet_length(array_send(array_agg(test_id))) FROM test_result "
            "WHERE project_id = %(p)s",
            {"p": project.id},
        ).scalar_one()
        assert one_array > cap  # what the old read built, per column

        monkeypatch.setattr(copy_frames, "MAX_VALUE_BYTES", cap)
        streamed = load_run_results(conn, project.id, days)
        filters = Filters(since=DAY - timedelta(days=2), until=DAY + timedelta(days=9))
        sums = load_fact_sums(conn, project.id, filters)
    assert len(whole) == 3 * TESTS
    pd.testing.assert_frame_equal(streamed, whole)
    assert sums["known"].sum() == 3 * TESTS
    assert np.isclose(sums["total_s"].sum(), whole["duration_s"].sum())


@pytest.mark.parametrize("until_offset", [8, 30])  # a daily and a weekly window
def test_streamed_rollup_reads_equal_the_one_value_reads(
    database: Database, engine: Engine, project: ProjectFixture, until_offset: int
) -> None:
    """Every rollup read, split or not, in parts or whole, against the same query read as
    one value: the CSV text of both is the server's, so the frames are equal."""
    _store_project(database, project)
    filters = Filters(since=DAY - timedelta(days=1), until=DAY + timedelta(days=until_offset))
    part = FactPart(DAY + timedelta(days=5), settled=True)
    with engine.connect() as conn:
        for split in ((), ("job",), ("job", "labels_key"), ("branch", "machine")):
            for piece in (None, part, FactPart(part.boundary, settled=False)):
                facts = load_file_facts(conn, project.id, filters, split_by=split, part=piece)
                sums = load_fact_sums(conn, project.id, filters, split_by=split, part=piece)
                assert len(facts) > 0 or piece is not None
                assert set(sums.columns) >= {"test_id", "day", "known", "total_s", *split}
                # The same rows whatever the split: the sums add up to the unsplit ones.
                assert np.isclose(
                    sums["total_s"].sum(),
                    load_fact_sums(conn, project.id, filters, part=piece)["total_s"].sum(),
                )
        filtered = Filters(
            since=filters.since, until=filters.until, jobs=("mac",), labels={"os": ("mac",)}
        )
        only_mac = load_fact_sums(conn, project.id, filtered, split_by=("job",))
        assert set(only_mac["job"]) == {"mac"}
        assert only_mac["known"].sum() == TESTS
        by_file = _one_value_frame(
            conn,
            """
            SELECT r.file, r.day, sum(r.total_s) AS total_s FROM rollup_file_daily r
            WHERE r.project_id = %(p)s GROUP BY r.file, r.day ORDER BY 1, 2
            """,
            {"p": project.id},
            1 << 30,
            {"file": "object"},
        )
        streamed = copy_frame(
            conn,
            sql.SQL(
                """
            SELECT r.file, r.day, sum(r.total_s) AS total_s FROM rollup_file_daily r
            WHERE r.project_id = %(p)s GROUP BY r.file, r.day ORDER BY 1, 2
            """
            ),
            {"p": project.id},
            dtypes={"file": "object"},
        )
    pd.testing.assert_frame_equal(streamed, by_file)


def test_copy_frame_keeps_awkward_values_as_the_one_value_read_did(engine: Engine) -> None:
    query = """
        SELECT * FROM (VALUES
            (1, 'plain', 2.5::float8, DATE '2026-01-02', true, ARRAY['a', 'b,c']),
            (2, 'quo"te, comma
newline', 'NaN'::float8, NULL, false, ARRAY[]::text[]),
            (3, NULL, NULL, DATE '1999-12-31', NULL, NULL),
            (4, %(hostile)s, -0.0::float8, DATE '2000-02-29', true, ARRAY[NULL, 'x'])
        ) v(i, t, f, d, b, a) ORDER BY i
    """
    params = {"hostile": "'); DROP TABLE run; --\\ %(p)s :p ü"}
    with engine.connect() as conn:
        # The one-value read left non-text columns unquoted: an array's comma split its row.
        old = _one_value_frame(
            conn, f"SELECT i, t, f, d FROM ({query}) o", params, 1 << 30, {"t": "object"}
        )
        new = copy_frame(conn, sql.SQL(query), params, dtypes={"t": "object"})
    pd.testing.assert_frame_equal(new.drop(columns=["b", "a"]), old)
    # Booleans come as COPY writes them (t/f), not as ::text ("true"): no read selects one.
    assert new["b"].tolist() == ["t", "f", np.nan, "t"]
    assert new["t"].iloc[3] == params["hostile"]
    assert new["a"].tolist() == ['{a,"b,c"}', "{}", np.nan, "{NULL,x}"]
