"""Recommendation endpoints: split plans, shards, machine sizing, parametrize cuts, matrix."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, HTTPException, Query

from analysis.catalogue import CatalogueError, load_catalogue_text, resolve_catalogues
from analysis.split_plan import SplitOptions, parse_duration_s
from app.api.deps import AdminProject, ConnDep, ReadProject
from app.api.params import FiltersDep
from app.db.projects import Project, set_catalogue
from app.project_reads import FrameCache
from app.recommend import (
    RecommendationError,
    machines_recommendation,
    matrix_recommendation,
    parametrize_recommendation,
    project_catalogue,
    shard_assignment,
    split_recommendation,
)

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["recommendations"])


def _catalogue_key(project: Project) -> tuple[str | None, str | None]:
    """What of a project, besides its data, changes a priced answer."""
    return project.catalogue, project.catalogue_toml


def _seconds(name: str, raw: str | None) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        return parse_duration_s(raw)
    except ValueError as exc:
        raise HTTPException(status_code=422, detail=f"{name}: {exc}") from exc


def _job_range(raw: str) -> tuple[int, int]:
    lo, sep, hi = raw.partition("-")
    try:
        low = int(lo)
        high = int(hi) if sep else low
    except ValueError:
        raise HTTPException(status_code=422, detail=f"jobs: {raw!r} is not N or N-M") from None
    return low, high


@router.get("/recommendations/split")
def split(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    jobs: Annotated[str, Query(description="job count N or range N-M")] = "2-6",
    granularity: Literal["file", "marker", "test", "auto"] = "auto",
    overhead: Annotated[str | None, Query(description="per-job setup, e.g. 5m")] = None,
    budget: Annotated[str | None, Query(description="per-job wall limit, e.g. 30m")] = None,
    objective: Literal["wait", "machine", "cost"] = "wait",
    wait_target: Annotated[str | None, Query()] = None,
    cell: Annotated[str | None, Query(description="labels key, e.g. os=linux,python=3.11")] = None,
) -> dict[str, Any]:
    """Which files or markers to move into their own jobs, with wait and machine time before
    and after, a verdict (including "not worth it") and the config to copy."""
    try:
        options = SplitOptions(
            jobs=_job_range(jobs),
            granularity=granularity,
            overhead_s=_seconds("overhead", overhead),
            budget_s=_seconds("budget", budget),
            objective=objective,
            wait_target_s=_seconds("wait_target", wait_target),
        )
        # Computed once per question and data version (see app.project_reads.FrameCache).
        key = ("split", repr(filters), repr(options), cell, *_catalogue_key(project))
        return FrameCache.for_project(conn, project.id).get(
            key,
            lambda: split_recommendation(conn, project, filters, options=options, cell=cell),
        )
    except (RecommendationError, ValueError) as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc


def _shards(
    conn: ConnDep, project: Any, filters: Any, total: int, index: int | None, collected: Any
) -> dict[str, Any]:
    try:
        return shard_assignment(
            conn, project, filters, total=total, index=index, collected=collected
        )
    except (RecommendationError, ValueError) as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc


@router.get("/shards")
def shards(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    total: Annotated[int, Query(ge=1, le=1000)],
    index: Annotated[int | None, Query(ge=1, description="1-based shard index")] = None,
) -> dict[str, Any]:
    """The tests of shard `index` (every shard without it), balanced by measured durations."""
    return _shards(conn, project, filters, total, index, None)


@router.post("/shards")
def shards_for_collected(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    total: Annotated[int, Query(ge=1, le=1000)],
    collected: Annotated[list[str], Body(description="nodeids collected by pytest")],
    index: Annotated[int | None, Query(ge=1)] = None,
) -> dict[str, Any]:
    """Shards of exactly the collected tests: new ones are placed by estimate, none is lost."""
    return _shards(conn, project, filters, total, index, collected)


@router.get("/recommendations/parametrize")
def parametrize(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    strength: Annotated[int, Query(ge=1, le=2)] = 2,
    top: Annotated[int, Query(ge=1, le=100)] = 10,
) -> dict[str, Any]:
    """The costliest parametrize explosions and covering sets that keep their coverage."""
    try:
        return parametrize_recommendation(conn, project, filters, strength=strength, top=top)
    except RecommendationError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc


@router.get("/recommendations/matrix")
def matrix(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    by: Literal["file", "marker"] = "file",
    threshold: Annotated[float, Query(gt=1.0)] = 1.5,
) -> dict[str, Any]:
    """Per file or marker and label dimension: keep all values, or one per PR and all on main."""
    try:
        return matrix_recommendation(conn, project, filters, group_by=by, threshold=threshold)
    except RecommendationError as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc


@router.get("/recommendations/machines")
def machines(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    headroom: Annotated[float, Query(ge=1.0, le=10.0)] = 1.25,
    wait_target: Annotated[str | None, Query(description="e.g. 40m; default today's wait")] = None,
    cell: Annotated[str | None, Query()] = None,
    split_jobs: Annotated[
        str | None, Query(description="also size the jobs of a split into N or N-M jobs")
    ] = None,
) -> dict[str, Any]:
    """The cheapest machine each job fits (memory measured, CPU from xdist), today and after a
    split, with cost per run and per month; jobs without memory data get no advice."""
    try:
        options = SplitOptions(jobs=_job_range(split_jobs)) if split_jobs else None
        wait_target_s = _seconds("wait_target", wait_target)
        key = (
            "machines",
            repr(filters),
            repr(options),
            headroom,
            wait_target_s,
            cell,
            *_catalogue_key(project),
        )
        return FrameCache.for_project(conn, project.id).get(
            key,
            lambda: machines_recommendation(
                conn,
                project,
                filters,
                headroom=headroom,
                wait_target_s=wait_target_s,
                cell=cell,
                split_options=options,
            ),
        )
    except (RecommendationError, CatalogueError, ValueError) as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc


@router.get("/catalogue")
def read_catalogue(project: ReadProject) -> dict[str, Any]:
    """The machine catalogue this project is priced from."""
    try:
        catalogue = project_catalogue(project)
    except (RecommendationError, CatalogueError) as exc:
        raise HTTPException(status_code=422, detail=str(exc)) from exc
    return {
        "name": project.catalogue,
        "custom_toml": project.catalogue_toml,
        "catalogue": catalogue.to_dict() if catalogue is not None else None,
        "shipped": sorted(resolve_catalogues()),
    }


@router.put("/catalogue")
def write_catalogue(
    project: AdminProject,
    conn: ConnDep,
    name: Annotated[str | None, Body(description="catalogue to use: circleci, github, ...")] = None,
    toml: Annotated[str | None, Body(description="your own catalogue (TOML), merged over")] = None,
) -> dict[str, Any]:
    """Declare the project's catalogue and/or store its own; validated before it is kept."""
    if toml:
        try:
            custom = load_catalogue_text(toml, source=f"project {project.slug}")
        except CatalogueError as exc:
            raise HTTPException(status_code=422, detail=str(exc)) from exc
        name = name or custom.name
    if name is not None and name not in resolve_catalogues(
        [load_catalogue_text(toml, source="upload")] if toml else []
    ):
        raise HTTPException(status_code=422, detail=f"no catalogue named {name!r}")
    set_catalogue(conn, project, name, toml or None)
    return {"name": name, "custom": bool(toml)}
