"""Stored changes told to the project's webhooks ("change.detected"), each change once.

Detection runs at ingest, which never imports the app; the webhook sender's pass
(app/cli/delivery_thread.py) queues what ingest stored since. A webhook registered after a
change still hears it while it is recent (RECENT_DAYS), never an old backlog.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine

from analysis.changes.listing import ChangeItem
from app.db.changes import ChangeQuery, changes_untold
from app.db.projects import list_projects
from app.db.webhooks import projects_hearing
from app.services.changes import changes_of
from app.services.webhooks import enqueue_event
from notify.events import ChangeNotice

CHANGE_EVENT = "change.detected"
RECENT_DAYS = 7


def enqueue_new_changes(
    engine: Engine, *, projects: Sequence[int] | None = None, now: datetime | None = None
) -> int:
    """Queue a "change.detected" delivery for every recent stored change a hearing webhook
    has not had (of `projects`, default every project); how many changes were queued."""
    since = (now or datetime.now(UTC)) - timedelta(days=RECENT_DAYS)
    with engine.connect() as conn:
        hearing = set(projects_hearing(conn, CHANGE_EVENT))
        if projects is not None:
            hearing &= set(projects)
        chosen = [p for p in list_projects(conn) if p.id in hearing] if hearing else []
    queued = 0
    for project in chosen:
        with engine.begin() as conn:
            for change_id in changes_untold(conn, project.id, CHANGE_EVENT, since=since):
                for item in changes_of(conn, project, ChangeQuery(change_id=change_id)):
                    enqueue_event(conn, project, CHANGE_EVENT, change_payload(item))
                    queued += 1
    return queued


def change_payload(item: ChangeItem) -> ChangeNotice:
    """The event's data (notify/events.py lists its fields) for one stored change."""
    return ChangeNotice(
        change_id=item.id,
        kind=item.kind,
        subject=item.name,
        cell=item.labels_key,
        median_before_s=item.median_before_s,
        median_after_s=item.median_after_s,
        delta_s=item.delta_s,
        commit_before=item.commit_before,
        commit_after=item.commit_after,
        runs_before=item.runs_before,
        job=item.job,
    )
