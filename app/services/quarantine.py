"""The quarantine for API, pages, CLI and the CI client: entries and their states, adding and
removing, the export in other runners' words, and flaky statistics reset per test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
from sqlalchemy import Connection

from analysis.errors import AnswerError
from analysis.flaky.quarantine import (
    QuarantineEntry,
    QuarantineState,
    active_nodeids,
    quarantine_states,
)
from analysis.flaky.quarantine_export import QuarantineExport, export_quarantine
from app.db.quarantine import (
    add_quarantine,
    load_quarantine,
    load_quarantine_results,
    remove_quarantine,
    set_flaky_reset,
)
from app.db.repository import load_runs
from app.project_records import Project
from app.services.project_reads import kept_test_dictionary, run_results, window_filters

# The export selects the tests seen in this many recent days (not every test ever stored).
EXPORT_DAYS = 30


class QuarantineNotFound(AnswerError):
    """No open quarantine entry for this test (a 404)."""

    status = 404
    code = "quarantine-not-found"


def quarantine_report(
    conn: Connection, project: Project, now: datetime | None = None
) -> list[QuarantineState]:
    """Every entry of the project (removed ones too) with its state now."""
    entries = load_quarantine(conn, project.id)
    if not entries:
        return []
    since = min(e.created_at for e in entries)
    nodeids = sorted({e.nodeid for e in entries})
    results = load_quarantine_results(conn, project.id, nodeids, since)
    return quarantine_states(entries, results, now or datetime.now(UTC))


def quarantined_now(conn: Connection, project: Project) -> frozenset[str]:
    """The tests quarantined now."""
    return active_nodeids(quarantine_report(conn, project))


def quarantine_test(
    conn: Connection,
    project: Project,
    nodeid: str,
    *,
    reason: str = "",
    expires_in_days: float | None = None,
    release_after_runs: int | None = None,
) -> tuple[QuarantineEntry, bool]:
    """Quarantine `nodeid` (True with the open entry when it already was)."""
    expires_at = (
        datetime.now(UTC) + timedelta(days=expires_in_days) if expires_in_days is not None else None
    )
    return add_quarantine(
        conn,
        project.id,
        nodeid,
        reason=reason,
        expires_at=expires_at,
        release_after_runs=release_after_runs,
    )


def release_test(conn: Connection, project: Project, nodeid: str) -> None:
    """End `nodeid`'s open quarantine entry (its history stays)."""
    if not remove_quarantine(conn, project.id, nodeid):
        raise QuarantineNotFound(f"{nodeid!r} is not quarantined")


def reset_flaky(conn: Connection, project: Project, nodeid: str, since: datetime) -> None:
    """Restart `nodeid`'s flaky statistics at `since` (a fix landed)."""
    set_flaky_reset(conn, project.id, nodeid, since)


def quarantine_export(conn: Connection, project: Project, runner: str) -> QuarantineExport:
    """The quarantine in `runner`'s words, over the tests seen in the last EXPORT_DAYS days."""
    runs = load_runs(conn, project.id, window_filters(EXPORT_DAYS))
    raw = run_results(conn, project.id, [int(i) for i in runs["run_id"]])
    tests = kept_test_dictionary(conn, project.id)
    seen = tests.loc[tests.index.intersection(pd.Index(raw["test_id"].unique()))]
    units = pd.Series(
        seen["file"].fillna(seen["nodeid"]).astype(str).to_numpy(), index=seen["nodeid"]
    )
    return export_quarantine(runner, units, quarantined_now(conn, project))
