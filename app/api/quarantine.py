"""The quarantine endpoints: the list (for readers and the CI client's upload token), adding
and removing (admin), the export in a runner's words, and flaky statistics reset (admin)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from app.http.deps import AdminProject, ConnDep, authorize_grant, grant_of
from app.http.params import NodeidText
from app.http.responses import PROJECT_ERRORS, answers
from app.project_records import Project
from app.schemas.quarantine import (
    FlakyResetBody,
    QuarantineAdd,
    QuarantineExportAnswer,
    QuarantineItem,
    QuarantineList,
)
from app.services.quarantine import (
    quarantine_export,
    quarantine_report,
    quarantine_test,
    release_test,
    reset_flaky,
)

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["quarantine"])


def quarantine_reader(request: Request, conn: ConnDep, slug: str) -> Project:
    """The project if this request may read it, or holds its upload token: CI jobs fetch the
    quarantine with the token they upload with."""
    grant = grant_of(request, conn)
    action = "upload" if grant is not None and grant.scope == "upload" else "read"
    return authorize_grant(grant, conn, slug, action)


QuarantineReader = Annotated[Project, Depends(quarantine_reader)]


@router.get("/quarantine", **answers(QuarantineList, *PROJECT_ERRORS))
def read_quarantine(project: QuarantineReader, conn: ConnDep) -> QuarantineList:
    """Quarantined tests (`active`) and every entry with its state: active, expired, released
    after its clean runs, or removed; each with its quarantined failures."""
    states = quarantine_report(conn, project)
    return QuarantineList(
        active=sorted(s.entry.nodeid for s in states if s.state == "active"),
        entries=[QuarantineItem.of(s) for s in states],
    )


@router.post("/quarantine", **answers(QuarantineItem, 400, *PROJECT_ERRORS))
def add_to_quarantine(project: AdminProject, conn: ConnDep, body: QuarantineAdd) -> QuarantineItem:
    """Quarantine a test: it still runs and reports, its failures do not fail the job. Adding
    a quarantined test again answers its open entry."""
    quarantine_test(
        conn,
        project,
        body.nodeid,
        reason=body.reason,
        expires_in_days=body.expires_in_days,
        release_after_runs=body.release_after_runs,
    )
    states = quarantine_report(conn, project)
    return QuarantineItem.of(next(s for s in reversed(states) if s.entry.nodeid == body.nodeid))


@router.delete("/quarantine", **answers(QuarantineList, *PROJECT_ERRORS))
def remove_from_quarantine(
    project: AdminProject, conn: ConnDep, nodeid: Annotated[NodeidText, Query()]
) -> QuarantineList:
    """End a test's quarantine; the entry and the test's history stay."""
    release_test(conn, project, nodeid)
    return read_quarantine(project, conn)


@router.get("/quarantine/export", **answers(QuarantineExportAnswer, *PROJECT_ERRORS))
def export_quarantine(
    project: QuarantineReader,
    conn: ConnDep,
    runner: Annotated[str, Query(min_length=1, max_length=40, pattern=r"^[a-z]+$")],
) -> QuarantineExportAnswer:
    """The quarantine in a runner's words: a gating run of every known test but the
    quarantined, and a run of the quarantined ones whose failures must not fail the job."""
    return QuarantineExportAnswer.of(quarantine_export(conn, project, runner))


@router.post("/flaky/reset", **answers(FlakyResetBody, 400, *PROJECT_ERRORS))
def reset_flaky_statistics(
    project: AdminProject, conn: ConnDep, body: FlakyResetBody
) -> FlakyResetBody:
    """Restart a test's flaky statistics from a moment (default now): a fix landed."""
    since = body.since or datetime.now(UTC)
    reset_flaky(conn, project, body.nodeid, since)
    return FlakyResetBody(nodeid=body.nodeid, since=since)
