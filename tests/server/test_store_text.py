"""No row's text fails a report: empty names, names over the index limit, and any string a
COPY could mangle (empty vs NULL, NUL, backslashes, tabs, newlines, lone surrogates)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import psycopg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.db.uploads import get_upload
from app.settings import Settings
from ingest.merge import merge_reports
from ingest.model import ParsedReport, results_frame
from ingest.store import KnownTests, RunMetadata, store_run
from ingest.worker import WorkerConfig, drain
from pgcodec.text_values import MAX_NAME_BYTES, cut_name, storable_text
from tests.conftest import Database, ProjectFixture
from tests.server.conftest import queue_upload, sqlalchemy_to_dsn


def _ingest(url: str, body: bytes) -> dict[str, Any]:
    upload_id = queue_upload(url, body, job="text")
    dsn = sqlalchemy_to_dsn(url)
    with psycopg.connect(dsn) as conn, psycopg.connect(dsn, autocommit=True) as side:
        drain(conn, side, WorkerConfig())
    from sqlalchemy import create_engine

    engine = create_engine(url)
    with engine.connect() as conn:
        doc = get_upload(conn, upload_id, lease_s=Settings().worker_lease_s)
    engine.dispose()
    assert doc is not None
    return doc


def test_a_jest_testcase_without_a_name_is_left_out_with_a_warning(private_db: str) -> None:
    # a nameless row can be neither planned nor shown; the report still is.
    body = (
        b'<testsuites><testsuite name="jest"><testcase classname="c" name="" time="0.5"/>'
        b'<testcase classname="c" name="named" time="0.25"/></testsuite></testsuites>'
    )
    doc = _ingest(private_db, body)
    assert (doc.status, doc.error_code) == ("done", None)
    assert doc.counts["results"] == 1
    assert any('testcase 1 (time="0.5")' in w for w in doc.warnings), doc.warnings
    with psycopg.connect(sqlalchemy_to_dsn(private_db)) as conn:
        functions = sorted(r[0] for r in conn.execute("SELECT function FROM test_case"))
    assert functions == ["named"]


def test_a_five_megabyte_name_is_cut_with_a_warning(private_db: str) -> None:
    long_a = "a" * 5_000_000
    long_b = "a" * 4_999_999 + "b"  # same first 2000 bytes: must stay a distinct test
    body = (
        f'<testsuite name="s"><testcase classname="c" name="{long_a}" time="1"/>'
        f'<testcase classname="c" name="{long_b}" time="2"/></testsuite>'
    ).encode()
    doc = _ingest(private_db, body)
    assert (doc.status, doc.error_code) == ("done", None)
    assert doc.counts["results"] == 2
    assert any("longer than 2000 bytes were cut" in w for w in doc.warnings)
    with psycopg.connect(sqlalchemy_to_dsn(private_db)) as conn:
        rows = conn.execute("SELECT nodeid, function FROM test_case").fetchall()
    assert len({nodeid for nodeid, _ in rows}) == 2
    assert all(len(n.encode()) <= MAX_NAME_BYTES and len(f.encode()) <= MAX_NAME_BYTES
               for n, f in rows)  # fmt: skip
    assert {f for _, f in rows} == {cut_name(long_a), cut_name(long_b)}


def test_cut_names_stay_valid_utf8_and_distinct() -> None:
    wide = "€" * 1000  # 3000 bytes
    cut = cut_name(wide)
    assert len(cut.encode()) <= MAX_NAME_BYTES
    assert cut.startswith("€" * 600)
    assert cut_name(wide) == cut  # stable
    assert cut_name(wide + "x") != cut
    assert cut_name("short") == "short"


# Text as hostile as reports get: controls, backslashes, quotes, NUL, lone surrogates.
_HOSTILE = st.lists(
    st.one_of(
        st.sampled_from(["\\", "\t", "\n", "\r", '"', ",", "\x00", "\\N", "\ud800", "é", "{}"]),
        st.characters(codec="utf-8"),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    ),
    max_size=8,
).map("".join)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    names=st.lists(st.tuples(_HOSTILE, _HOSTILE, _HOSTILE), min_size=1, max_size=4),
    message=st.one_of(st.none(), _HOSTILE),
    worker=st.one_of(st.none(), _HOSTILE),
)
def test_every_copied_field_round_trips(
    database: Database, project: ProjectFixture, names, message, worker
) -> None:
    # "#i" ends each nodeid: one ending in "::" names no test and is left out.
    nodeids = [f"{i}:{file}::{function}#{i}" for i, (file, function, _) in enumerate(names)]
    report = ParsedReport(
        format="junit",
        results=results_frame(
            {
                "nodeid": nodeids,
                "file": [f for f, _, _ in names],
                "classname": [c for _, _, c in names],
                "function": [fn for _, fn, _ in names],
                "params": [c or None for _, _, c in names],
                "markers": [[c] for _, _, c in names],
                "outcome": ["failed"] * len(names),
                "duration_s": [1.0] * len(names),
                "worker": [worker] * len(names),
                "message": [message] * len(names),
            }
        ),
    )
    with psycopg.connect(database.dsn) as conn:
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
            "RETURNING id",
            (project.id, repr((names, message, worker, datetime.now())).encode("utf-8", "replace")),
        ).fetchone()[0]  # type: ignore[index]
        stored = store_run(
            conn,
            project_id=project.id,
            upload_id=upload_id,
            meta=RunMetadata(job="rt", started_at=datetime(2026, 11, 30, tzinfo=UTC)),
            merged=merge_reports([report]),
            known_tests=KnownTests(),  # every example is rolled back: remember nothing
        )
        rows = conn.execute(
            "SELECT c.nodeid, c.file, c.function, c.classname, c.params, c.markers, r.worker, "
            "r.message FROM test_result r JOIN test_case c ON c.id = r.test_id "
            "WHERE r.run_id = %s ORDER BY c.nodeid",
            (stored.run_id,),
        ).fetchall()
        conn.rollback()
    clean = storable_text
    expected = sorted(
        (
            clean(nodeid), clean(file), clean(function), clean(classname),
            clean(classname) or None, [clean(classname)],
            None if worker is None else clean(worker),
            None if message is None else clean(message),
        )
        for nodeid, (file, function, classname) in zip(nodeids, names, strict=True)
    )  # fmt: skip
    assert sorted(rows) == expected
