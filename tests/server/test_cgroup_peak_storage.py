"""A job peak the report itself labels as its container cgroup's (plugins before #18 fell back
to cgroup v2 `memory.peak`, a lifetime maximum over every process in the container) is not
stored as the run's peak; a process-tree peak is."""

from __future__ import annotations

from datetime import UTC, datetime

import psycopg
from sqlalchemy import Engine, text

from ingest.merge import merge_reports
from ingest.model import ParsedReport, SessionInfo, results_frame
from ingest.store import RunMetadata, store_run
from tests.conftest import Database, ProjectFixture


def _store_with(
    database: Database, project: ProjectFixture, session: SessionInfo, peak: float | None
) -> tuple[int, list[str]]:
    report = ParsedReport(
        format="laptime-json",
        results=results_frame({"nodeid": ["a.py::t"], "outcome": ["passed"], "duration_s": [1.0]}),
        session=session,
    )
    with psycopg.connect(database.dsn) as conn:
        upload_id = conn.execute(
            "INSERT INTO upload (project_id, content_hash, status) VALUES (%s, %s, 'done') "
            "RETURNING id",
            (project.id, f"{session}{datetime.now()}".encode()),
        ).fetchone()[0]  # type: ignore[index]
        stored = store_run(
            conn,
            project_id=project.id,
            upload_id=upload_id,
            meta=RunMetadata(
                job="unit", started_at=datetime(2026, 11, 30, 12, tzinfo=UTC), peak_rss_mib=peak
            ),
            merged=merge_reports([report]),
        )
        conn.commit()
    return stored.run_id, stored.warnings


def _peak(engine: Engine, run_id: int) -> float | None:
    with engine.connect() as conn:
        value = conn.execute(text("SELECT peak_rss_mib FROM run WHERE id = :r"), {"r": run_id})
        return value.scalar_one()  # type: ignore[no-any-return]


def test_a_cgroup_labelled_job_peak_is_not_the_runs(
    database: Database, engine: Engine, project: ProjectFixture
) -> None:
    old_plugin = SessionInfo(peak_rss_mib=996.0, peak_rss_source="cgroup", cgroup_peak_mib=996.0)
    # The old plugin's upload sent the same number as the form's peak_rss_mib.
    run_id, warnings = _store_with(database, project, old_plugin, 996.0)
    assert _peak(engine, run_id) is None
    assert any("cgroup's lifetime peak" in w for w in warnings)
    tree = SessionInfo(peak_rss_mib=281.0, peak_rss_source="process-tree", cgroup_peak_mib=996.0)
    run_id, warnings = _store_with(database, project, tree, None)
    assert _peak(engine, run_id) == 281.0
    assert warnings == []
