"""The weekly digest of a project: made from the weekly rollups, shown by `laptime digest` and
the API, and sent as a "digest.weekly" event once per project and week."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import Connection, Engine

from analysis.digest.weekly import WeeklyDigest, last_complete_week, week_of, weekly_digest
from app.db.digest_reads import weekly_file_sums, weekly_test_sums
from app.db.projects import list_projects
from app.db.webhooks import dedupe_key_taken, projects_hearing
from app.project_records import Project
from app.services.webhooks import enqueue_event
from notify.digest import digest_data, digest_markdown

log = logging.getLogger("laptime.webhooks")

DIGEST_EVENT = "digest.weekly"


def project_digest(conn: Connection, project: Project, week: date) -> WeeklyDigest:
    """The digest of the week holding `week` against the week before."""
    monday = week_of(week)
    weeks = [monday, monday - timedelta(days=7)]
    return weekly_digest(
        weekly_test_sums(conn, project.id, weeks), weekly_file_sums(conn, project.id, weeks), monday
    )


@dataclass(frozen=True)
class DigestAnswer:
    """A project's weekly digest and its markdown (app.schemas.webhooks.Digest is its wire
    form; a "digest.weekly" event's data is the same, made by notify.digest)."""

    digest: WeeklyDigest
    text: str


def digest_answer(conn: Connection, project: Project, week: date | None) -> DigestAnswer:
    """The digest the API and `laptime digest` give (default: the last week that has ended)."""
    chosen = week if week is not None else last_complete_week(datetime.now(UTC).date())
    digest = project_digest(conn, project, chosen)
    return DigestAnswer(digest, digest_markdown(project.slug, digest))


def enqueue_weekly_digests(engine: Engine, *, today: date | None = None) -> int:
    """Queue the last ended week's digest for every project with a webhook hearing it, once
    per project and week (the week is the dedupe key); how many projects got one."""
    week = last_complete_week(today or datetime.now(UTC).date())
    key = f"digest:{week.isoformat()}"
    sent = 0
    with engine.connect() as conn:
        hearing = set(projects_hearing(conn, DIGEST_EVENT))
        projects = [p for p in list_projects(conn) if p.id in hearing] if hearing else []
    for project in projects:
        with engine.begin() as conn:
            if dedupe_key_taken(conn, project.id, DIGEST_EVENT, key):
                continue
            data = digest_data(project.slug, project_digest(conn, project, week))
            if enqueue_event(conn, project, DIGEST_EVENT, data, dedupe_key=key):
                sent += 1
                log.info("weekly digest of %s for %s queued", project.slug, week)
    return sent
