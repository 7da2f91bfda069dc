"""The changes answer: stored changes of a project, listed and given a state."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection

from analysis.changes.listing import ChangeItem, change_items, sort_changes, with_weekly
from analysis.changes.step_series import SeriesRun, series_runs, step_points
from analysis.errors import AnswerError
from analysis.sizing.catalogue import machine_prices
from app.db.changes import (
    ChangeQuery,
    ChangeSource,
    change_source,
    default_branch_override,
    load_changes,
    pipeline_runs_around,
    project_default_branch,
    recent_run_rates,
    runs_around,
    series_results,
    set_change_state,
)
from app.db.changes import set_default_branch as store_default_branch
from app.project_records import Project
from app.services.project_reads import FrameCache
from app.services.recommendations import project_catalogue

__all__ = [
    "ChangeNotFound",
    "ChangeQuery",
    "ChangeSeries",
    "ChangesAnswer",
    "DefaultBranch",
    "StateSet",
    "change_list",
    "change_series",
    "changes_of",
    "project_default_branch",
    "set_state",
]


class ChangeNotFound(AnswerError):
    """No change of the project has this id (a 404)."""

    status = 404
    code = "change-not-found"


def changes_of(
    conn: Connection, project: Project, query: ChangeQuery, sort: str = "per_run"
) -> list[ChangeItem]:
    """The project's changes that match `query`, with the machine time and money each adds a
    week, the most added first by `sort` (per_run, per_week or cost)."""
    items = change_items(load_changes(conn, project.id, query))
    if items:
        per_cell, pipelines = recent_run_rates(
            conn, project.id, project_default_branch(conn, project.id)
        )
        items = with_weekly(items, per_cell, pipelines, _prices(project, items))
    return sort_changes(items, sort)


@dataclass(frozen=True)
class ChangesAnswer:
    """The project's default branch and its changes that match a query (most time first)."""

    default_branch: str | None
    changes: tuple[ChangeItem, ...]


@dataclass(frozen=True)
class StateSet:
    """A change whose state was set."""

    id: int
    state: str


def _prices(project: Project, items: list[ChangeItem]) -> dict[str, float]:
    """Dollars a minute by the changes' machine types; none where no catalogue prices them
    (a project naming a catalogue that is gone still lists its changes, unpriced)."""
    machines = sorted({c.machine for c in items if c.machine})
    if not machines:
        return {}
    try:
        catalogue = project_catalogue(project, machines)
    except AnswerError:
        return {}
    return machine_prices(catalogue, machines) if catalogue is not None else {}


def change_list(
    conn: Connection, project: Project, query: ChangeQuery, sort: str = "per_run"
) -> ChangesAnswer:
    """The answer of `query` (app.schemas.changes.ChangeList is its wire form)."""
    return ChangesAnswer(
        default_branch=project_default_branch(conn, project.id),
        changes=tuple(changes_of(conn, project, query, sort)),
    )


@dataclass(frozen=True)
class ChangeSeries:
    """A change and its series' points on either side of the step (what its figure draws)."""

    change: ChangeItem
    points: tuple[SeriesRun, ...]


def change_series(conn: Connection, project: Project, change_id: int) -> ChangeSeries:
    """The change `change_id` of the project and its series around the step."""
    source = change_source(conn, project.id, change_id)
    found = changes_of(conn, project, ChangeQuery(change_id=change_id))
    if source is None or not found:
        raise ChangeNotFound(f"no change {change_id} in project {project.slug!r}")
    # The points change only with the stored data (a change's runs are fixed): kept under the
    # project's data version, so asking again (a page reload, a script polling) reads nothing.
    cache = FrameCache.for_project(conn, project.id)
    points = cache.get(("change-series", change_id), lambda: _series_points(conn, project, source))
    return ChangeSeries(change=found[0], points=points)


def _series_points(
    conn: Connection, project: Project, source: ChangeSource
) -> tuple[SeriesRun, ...]:
    """The change's series around its step, from the stored runs and results."""
    if source.cell_id is None:
        stored = pipeline_runs_around(
            conn, project.id, source.branch or "", source.key, source.run_id_after
        )
        return series_runs(stored)
    runs = runs_around(conn, source.cell_id, source.run_id_after)
    runs, results = series_results(
        conn, project.id, runs, source.kind, source.key, source.run_id_after
    )
    return step_points(source.kind, source.key, runs, results, source.run_id_after)


def set_state(conn: Connection, project: Project, change_id: int, state: str) -> StateSet:
    """Set a change's state (open, acknowledged, resolved)."""
    if not set_change_state(conn, project.id, change_id, state):
        raise ChangeNotFound(f"no change {change_id} in project {project.slug!r}")
    return StateSet(id=change_id, state=state)


@dataclass(frozen=True)
class DefaultBranch:
    """The branch whose runs are watched, and the admins' name for it (None: detected)."""

    override: str | None
    default_branch: str | None


def default_branch(conn: Connection, project: Project) -> DefaultBranch:
    """The project's watched branch and where it comes from."""
    return DefaultBranch(
        override=default_branch_override(conn, project.id),
        default_branch=project_default_branch(conn, project.id),
    )


def set_default_branch(conn: Connection, project: Project, branch: str | None) -> DefaultBranch:
    """Name the watched branch (None: detect it again). Runs already stored keep the series
    they were pushed into; uploads from now on are watched on this branch."""
    store_default_branch(conn, project.id, branch)
    return default_branch(conn, project)
