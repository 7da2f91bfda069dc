"""Recommendation endpoints: split plans, shards, machine sizing, parametrize cuts, matrix."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Body, Depends, Query

from analysis.sizing.catalogue import load_catalogue_text, resolve_catalogues
from analysis.split.options import MAX_JOBS, SplitOptions
from app.http.deps import AdminProject, ConnDep, ReadProject
from app.http.errors import ApiError
from app.http.params import (
    ClientGoneDep,
    DurationText,
    FiltersDep,
    JobRangeText,
    MaybeText,
    NodeidText,
    Text,
    duration_s,
    invalid,
    job_range,
)
from app.http.responses import PROJECT_ERRORS, answers
from app.project_records import Project
from app.schemas.reduce import Matrix, Parametrize
from app.schemas.sizing import CatalogueDoc, CatalogueSet, Machines, ProjectCatalogue
from app.schemas.split import Shards, SplitPlan
from app.services.project_reads import FrameCache
from app.services.projects import set_catalogue
from app.services.recommendations import (
    MachinesAnswer,
    SplitAnswer,
    machines_recommendation,
    matrix_recommendation,
    parametrize_recommendation,
    project_catalogue,
    shard_assignment,
    split_recommendation,
    track_split_plan,
)
from app.work_limits import MAX_TOP_EXPLOSIONS, PLAN_TIME_LIMIT_S, stop_after

router = APIRouter(prefix="/api/v1/projects/{slug}", tags=["recommendations"])

# Most shards a suite may be cut into.
MAX_SHARDS = 1000
JOBS_TEXT = f"job count N or range N-M, at most {MAX_JOBS} jobs"
# Nodeids a shard request may carry, and their length: a big monorepo collects ~100k tests.
MAX_COLLECTED = 200_000
# A machine catalogue is a page of TOML; past this it is not a catalogue.
MAX_CATALOGUE_CHARS = 256 * 1024


def _catalogue_key(project: Project) -> tuple[str | None, str | None]:
    """What of a project, besides its data, changes a priced answer."""
    return project.catalogue, project.catalogue_toml


@dataclass(frozen=True)
class SplitQuestion:
    """A split question's parameters, asked the same way read (GET) or tracked (POST)."""

    jobs: str
    granularity: str
    overhead: str | None
    budget: str | None
    objective: str
    wait_target: str | None
    cell: str | None


def split_question(
    jobs: Annotated[JobRangeText, Query(description=JOBS_TEXT)] = "2-6",
    granularity: Literal["file", "marker", "test", "auto"] = "auto",
    overhead: Annotated[DurationText | None, Query(description="per-job setup, e.g. 5m")] = None,
    budget: Annotated[
        DurationText | None, Query(description="per-job wall limit, e.g. 30m")
    ] = None,
    objective: Literal["wait", "machine", "cost"] = "wait",
    wait_target: Annotated[DurationText | None, Query()] = None,
    cell: Annotated[MaybeText, Query(description="labels key, e.g. os=linux,python=3.11")] = None,
) -> SplitQuestion:
    """The split question from the query string."""
    return SplitQuestion(jobs, granularity, overhead, budget, objective, wait_target, cell)


SplitQuestionDep = Annotated[SplitQuestion, Depends(split_question)]


def _split_answer(
    project: Project,
    conn: ConnDep,
    filters: Any,
    client_gone: Any,
    question: SplitQuestion,
) -> SplitAnswer:
    options = _options(
        jobs=job_range("jobs", question.jobs),
        granularity=question.granularity,
        overhead_s=duration_s("overhead", question.overhead),
        budget_s=duration_s("budget", question.budget),
        objective=question.objective,
        wait_target_s=duration_s("wait_target", question.wait_target),
    )
    cell = question.cell
    should_stop = stop_after(PLAN_TIME_LIMIT_S, also=client_gone)
    # Computed once per question and data version (see app.services.project_reads.FrameCache);
    # an incomplete plan is not kept, the next asker gets a fresh try.
    key = ("split", filters.key, options, cell, *_catalogue_key(project))
    return FrameCache.for_project(conn, project.id).get(
        key,
        lambda: split_recommendation(
            conn, project, filters, options=options, cell=cell, should_stop=should_stop
        ),
        keep=_complete,
    )


@router.get("/recommendations/split", **answers(SplitPlan, *PROJECT_ERRORS))
def split(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    client_gone: ClientGoneDep,
    question: SplitQuestionDep,
) -> SplitPlan:
    """Which files or markers to move into their own jobs, with wait and machine time before
    and after, a verdict (including "not worth it") and the config to copy.

    Planning stops at a time limit (or when the client leaves); the answer then holds the job
    counts done and says `"complete": false`. A read: stores nothing and answers `plan_id: null`;
    POST the same question to track the plan."""
    return SplitPlan.answer(_split_answer(project, conn, filters, client_gone, question))


@router.post("/recommendations/split", **answers(SplitPlan, *PROJECT_ERRORS))
def track_split(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    client_gone: ClientGoneDep,
    question: SplitQuestionDep,
) -> SplitPlan:
    """The same answer as GET, tracked: the plan is stored and `plan_id` names it; the
    config's jobs upload it, so the accuracy page compares it with what they measured."""
    answer = _split_answer(project, conn, filters, client_gone, question)
    return SplitPlan.answer(track_split_plan(conn, project, answer))


def _options(**kwargs: Any) -> SplitOptions:
    return SplitOptions(**kwargs)


def _complete(answer: SplitAnswer | MachinesAnswer) -> bool:
    return answer.complete


def _shards(
    conn: ConnDep,
    project: Any,
    filters: Any,
    total: int,
    index: int | None,
    collected: Any,
    *,
    pipeline: str | None = None,
    track: bool = False,
) -> Shards:
    if index is not None and index > total:
        raise invalid("index", f"must be between 1 and total ({total})", index)
    answer = shard_assignment(
        conn,
        project,
        filters,
        total=total,
        index=index,
        collected=collected,
        pipeline=pipeline,
        track=track,
    )
    return Shards.of(answer)


@router.get("/shards", **answers(Shards, *PROJECT_ERRORS))
def shards(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    total: Annotated[int, Query(ge=1, le=MAX_SHARDS)],
    index: Annotated[
        int | None, Query(ge=1, le=MAX_SHARDS, description="1-based shard index, <= total")
    ] = None,
) -> Shards:
    """The tests of shard `index` (every shard without it), balanced by measured durations.

    A read: stores nothing, `plan_id` is null; CI shards POST their collected tests."""
    return _shards(conn, project, filters, total, index, None)


@router.post("/shards", **answers(Shards, 400, 409, *PROJECT_ERRORS))
def shards_for_collected(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    total: Annotated[int, Query(ge=1, le=MAX_SHARDS)],
    collected: Annotated[
        list[NodeidText],
        Body(max_length=MAX_COLLECTED, description="nodeids collected by pytest"),
    ],
    index: Annotated[int | None, Query(ge=1, le=MAX_SHARDS)] = None,
    pipeline: Annotated[
        Text | None,
        Query(
            max_length=200,
            description="CI pipeline run id: its first shard's plan is pinned for every shard",
        ),
    ] = None,
) -> Shards:
    """Shards of exactly the collected tests: new ones are placed by estimate, none is lost.

    The plan is stored (`plan_id`); with `pipeline`, the first answer is pinned and every later
    shard of the pipeline gets it (409 `shard-pin-mismatch` if it collected other tests)."""
    return _shards(
        conn, project, filters, total, index, collected, pipeline=pipeline or None, track=True
    )


@router.get("/recommendations/parametrize", **answers(Parametrize, *PROJECT_ERRORS))
def parametrize(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    strength: Annotated[int, Query(ge=1, le=2)] = 2,
    top: Annotated[int, Query(ge=1, le=MAX_TOP_EXPLOSIONS)] = 10,
) -> Parametrize:
    """The costliest parametrize explosions and covering sets that keep their coverage."""
    return Parametrize.of(
        parametrize_recommendation(conn, project, filters, strength=strength, top=top)
    )


@router.get("/recommendations/matrix", **answers(Matrix, *PROJECT_ERRORS))
def matrix(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    by: Literal["file", "marker"] = "file",
    threshold: Annotated[float, Query(gt=1.0, le=1000.0, allow_inf_nan=False)] = 1.5,
) -> Matrix:
    """Per file or marker and label dimension: keep all values, or one per PR and all on main."""
    return Matrix.of(
        matrix_recommendation(conn, project, filters, group_by=by, threshold=threshold)
    )


@router.get("/recommendations/machines", **answers(Machines, *PROJECT_ERRORS))
def machines(
    project: ReadProject,
    conn: ConnDep,
    filters: FiltersDep,
    client_gone: ClientGoneDep,
    headroom: Annotated[float, Query(ge=1.0, le=10.0, allow_inf_nan=False)] = 1.25,
    wait_target: Annotated[
        DurationText | None, Query(description="e.g. 40m; default today's wait")
    ] = None,
    cell: Annotated[MaybeText, Query()] = None,
    split_jobs: Annotated[
        JobRangeText | None, Query(description=f"also size the jobs of a split: {JOBS_TEXT}")
    ] = None,
) -> Machines:
    """The cheapest machine each job fits (memory measured, CPU from xdist), today and after a
    split, with cost per run and per month; jobs without memory data get no advice."""
    options = _options(jobs=job_range("split_jobs", split_jobs)) if split_jobs else None
    wait_target_s = duration_s("wait_target", wait_target)
    key = (
        "machines",
        filters.key,
        options,
        headroom,
        wait_target_s,
        cell,
        *_catalogue_key(project),
    )
    answer = FrameCache.for_project(conn, project.id).get(
        key,
        lambda: machines_recommendation(
            conn,
            project,
            filters,
            headroom=headroom,
            wait_target_s=wait_target_s,
            cell=cell,
            split_options=options,
            should_stop=stop_after(PLAN_TIME_LIMIT_S, also=client_gone),
        ),
        keep=_complete,
    )
    return Machines.of(answer)


@router.get("/catalogue", **answers(ProjectCatalogue, *PROJECT_ERRORS))
def read_catalogue(project: ReadProject) -> ProjectCatalogue:
    """The machine catalogue this project is priced from."""
    catalogue = project_catalogue(project)
    return ProjectCatalogue(
        name=project.catalogue,
        custom_toml=project.catalogue_toml,
        catalogue=CatalogueDoc.of(catalogue) if catalogue is not None else None,
        shipped=sorted(resolve_catalogues()),
    )


@router.put("/catalogue", **answers(CatalogueSet, 400, *PROJECT_ERRORS))
def write_catalogue(
    project: AdminProject,
    conn: ConnDep,
    name: Annotated[
        Text | None, Body(max_length=200, description="catalogue to use: circleci, github, ...")
    ] = None,
    toml: Annotated[
        str | None,
        Body(max_length=MAX_CATALOGUE_CHARS, description="your own catalogue (TOML), merged over"),
    ] = None,
) -> CatalogueSet:
    """Declare the project's catalogue and/or store its own; validated before it is kept."""
    name = name or None  # empty is not given, as everywhere
    if toml:
        custom = load_catalogue_text(toml, source=f"project {project.slug}")
        name = name or custom.name
        if "\x00" in toml or "\x00" in name:
            # TOML may spell a NUL (`"\u0000"`); Postgres text cannot hold one.
            raise ApiError(422, "request-unprocessable", "the catalogue holds a NUL character")
    if name is not None and name not in resolve_catalogues(
        [load_catalogue_text(toml, source="upload")] if toml else []
    ):
        raise ApiError(422, "request-unprocessable", f"no catalogue named {name!r}")
    set_catalogue(conn, project, name, toml or None)
    return CatalogueSet(name=name, custom=bool(toml))
