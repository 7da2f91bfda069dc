"""The changes answer: stored changes of a project, listed and given a state."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from sqlalchemy import Connection

from analysis.changes.listing import ChangeItem, change_items
from analysis.errors import AnswerError
from app.db.changes import ChangeQuery, load_changes, project_default_branch, set_change_state
from app.project_records import Project

__all__ = [
    "ChangeNotFound",
    "ChangeQuery",
    "change_list",
    "changes_of",
    "project_default_branch",
    "set_state",
]


class ChangeNotFound(AnswerError):
    """No change of the project has this id (a 404)."""

    status = 404
    code = "change-not-found"


def changes_of(conn: Connection, project: Project, query: ChangeQuery) -> list[ChangeItem]:
    """The project's changes that match `query`, the most time added per run first."""
    return change_items(load_changes(conn, project.id, query))


def change_list(conn: Connection, project: Project, query: ChangeQuery) -> dict[str, Any]:
    """The REST answer (app.schemas.changes.ChangeList) of `query`."""
    return {
        "default_branch": project_default_branch(conn, project.id),
        "changes": [item_dict(item) for item in changes_of(conn, project, query)],
    }


def item_dict(item: ChangeItem) -> dict[str, Any]:
    """One change as its wire model's fields."""
    answer = asdict(item)
    answer["between"] = None if item.between is None else list(item.between)
    answer["bisect"] = [asdict(step) for step in item.bisect]
    return answer


def set_state(conn: Connection, project: Project, change_id: int, state: str) -> dict[str, Any]:
    """Set a change's state (open, acknowledged, resolved)."""
    if not set_change_state(conn, project.id, change_id, state):
        raise ChangeNotFound(f"no change {change_id} in project {project.slug!r}")
    return {"id": change_id, "state": state}
