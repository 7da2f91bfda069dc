"""A job peak the report itself labels as its container cgroup's (older plugins fell back
to cgroup v2 `memory.peak`, a lifetime maximum over every process in the container) is not
stored as the run's peak; a process-tree peak is."""

from __future__ import annotations

from sqlalchemy import Engine, text

from ingest.merge import merge_reports
from ingest.model import ParsedReport, SessionInfo, results_frame
from tests.conftest import Database, ProjectFixture
from tests.server.test_store import _store_result


def _store_with(
    database: Database, project: ProjectFixture, session: SessionInfo, peak: float | None
) -> tuple[int, list[str]]:
    report = ParsedReport(
        format="laptime-json",
        results=results_frame({"nodeid": ["a.py::t"], "outcome": ["passed"], "duration_s": [1.0]}),
        session=session,
    )
    stored = _store_result(database, project, merge_reports([report]), peak_rss_mib=peak)
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
