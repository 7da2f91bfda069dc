"""The compare answer: a pipeline's runs against the base branch's recent runs of its cell."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from sqlalchemy import Connection

from analysis.compare.cost import CostComparison, compare_cost
from analysis.compare.plan_fit import PlanFit, fit_plan, moved_seconds
from analysis.compare.runs import Comparison, compare_runs
from analysis.errors import AnswerError
from analysis.filters import Filters
from analysis.sizing.catalogue import machine_prices
from app.db.plans import latest_split_plan
from app.db.repository import load_runs
from app.project_records import Project
from app.services.project_reads import kept_test_dictionary, run_results
from app.services.quarantine import quarantined_now
from app.services.recommendations import project_catalogue
from model.frames import cell_key

# Base runs compared against: the newest of the cell, enough for a median and a MAD.
BASE_RUNS = 20


class PipelineUnknown(AnswerError):
    """No run of the project carries this pipeline id (a 404)."""

    status = 404
    code = "pipeline-unknown"


def _named(conn: Connection, project: Project, run_ids: list[int]) -> pd.DataFrame:
    """Results of runs with nodeid and outcome text."""
    results = run_results(conn, project.id, run_ids)
    tests = kept_test_dictionary(conn, project.id)
    frame = results.assign(nodeid=results["test_id"].map(tests["nodeid"]))
    return frame[["run_id", "nodeid", "outcome", "duration_s", "flaky"]].fillna({"duration_s": 0.0})


@dataclass(frozen=True)
class CompareAnswer:
    """A pipeline against its base: the comparison, its machine time priced, the stored split
    plan's fit (None without one); app.schemas.compare.Compare is its wire form."""

    pipeline: str
    base: str
    cells: tuple[str, ...]
    comparison: Comparison
    priced: CostComparison
    plan_fit: PlanFit | None


def compare_pipeline(conn: Connection, project: Project, pipeline: str, base: str) -> CompareAnswer:
    """The pipeline's runs against `base`'s newest runs of the same job and labels."""
    runs = load_runs(conn, project.id, Filters())
    head = runs[runs["pipeline"] == pipeline]
    if head.empty:
        raise PipelineUnknown(f"no run of pipeline {pipeline!r} in project {project.slug!r}")
    cells = set(zip(head["job"], head["labels_key"], strict=True))
    in_cell = pd.Series(
        [(j, k) in cells for j, k in zip(runs["job"], runs["labels_key"], strict=True)],
        index=runs.index,
        dtype=bool,
    )
    base_runs = runs[in_cell & (runs["branch"] == base) & (runs["pipeline"] != pipeline)]
    base_runs = base_runs.sort_values("started_at").tail(BASE_RUNS)
    if base_runs.empty:
        raise AnswerError(f"no runs of branch {base!r} in the cell(s) of pipeline {pipeline!r}")
    base_results = _named(conn, project, [int(i) for i in base_runs["run_id"]])
    comparison = compare_runs(
        head,
        _named(conn, project, [int(i) for i in head["run_id"]]),
        base_runs,
        base_results,
        quarantined=quarantined_now(conn, project),
    )
    return CompareAnswer(
        pipeline=pipeline,
        base=base,
        cells=tuple(sorted(f"{job or ''}|{key or ''}" for job, key in cells)),
        comparison=comparison,
        priced=_priced(project, head, base_runs),
        plan_fit=_plan_fit(conn, project, head, comparison, base_results),
    )


def _priced(project: Project, head: pd.DataFrame, base_runs: pd.DataFrame) -> CostComparison:
    """Machine time and its cost from the project's catalogue (cost None when unpriced)."""
    machines = [*head["machine"].tolist(), *base_runs["machine"].tolist()]
    try:
        catalogue = project_catalogue(project, machines)
    except AnswerError:
        # A catalogue the project names but no longer resolves prices nothing; the rest of
        # the comparison still answers.
        catalogue = None
    prices = machine_prices(catalogue, machines) if catalogue is not None else None
    return compare_cost(head, base_runs, prices, None if catalogue is None else catalogue.unit)


def _plan_fit(
    conn: Connection,
    project: Project,
    head: pd.DataFrame,
    comparison: Comparison,
    base_results: pd.DataFrame,
) -> PlanFit | None:
    """The stored split plan the head ran (else the newest of its cell) with the moves added."""
    plan = latest_split_plan(
        conn,
        project.id,
        cells=sorted({cell_key(labels) for labels in head["labels"]}),
        plan_ids=sorted({str(p) for p in head["plan_id"].dropna()}),
    )
    if plan is None or not plan.jobs:
        return None
    return fit_plan(plan, moved_seconds(comparison, base_results))
