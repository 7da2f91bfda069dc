"""The flaky answer for API, pages and CLI: the window's results, priced from the project's
catalogue, through analysis.flaky (docs/flaky.md)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

from sqlalchemy import Connection

from analysis.filters import Filters
from analysis.flaky.report import FlakyReport, flaky_report
from app.db.quarantine import load_flaky_resets
from app.db.repository import load_runs, with_tests
from app.project_records import Project
from app.services.project_reads import kept_test_dictionary, open_week_start, run_results
from app.services.quarantine import quarantined_now
from app.services.recommendations import project_prices

# Most flaky tests one answer lists (the totals count them all).
MAX_TESTS = 1000
DEFAULT_TESTS = 100


def project_flaky_report(conn: Connection, project: Project, filters: Filters) -> FlakyReport:
    """Flaky tests of the window's runs and their cost."""
    runs = load_runs(conn, project.id, filters)
    raw = run_results(conn, project.id, [int(i) for i in runs["run_id"]])
    tests = kept_test_dictionary(conn, project.id)
    results = with_tests(filters, raw, tests)
    resets = flaky_resets(conn, project)
    return flaky_report(results, runs, resets=resets, prices=project_prices(project, runs))


def flaky_resets(conn: Connection, project: Project) -> dict[str, datetime]:
    """Per test, the moment its flaky statistics restart (a fix landed)."""
    return load_flaky_resets(conn, project.id)


@dataclass(frozen=True)
class FlakyRead:
    """A flaky report with what its answer says beside it."""

    report: FlakyReport
    since: date | None
    week: str  # Monday of the current UTC week
    quarantined: frozenset[str]


def project_flaky(conn: Connection, project: Project, filters: Filters) -> FlakyRead:
    """Flaky tests of the window most costly first, cost per file, job, week, this week's."""
    report = project_flaky_report(conn, project, filters)
    week = open_week_start(datetime.now(UTC).date()).isoformat()
    return FlakyRead(report, filters.since, week, quarantined_now(conn, project))
