"""The compare answer: a pipeline's runs against the base branch's recent runs of its cell."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pandas as pd
from sqlalchemy import Connection

from analysis.compare.runs import compare_runs
from analysis.errors import AnswerError
from analysis.filters import Filters
from app.db.repository import load_runs
from app.project_records import Project
from app.services.project_reads import kept_test_dictionary, run_results
from app.services.quarantine import quarantined_now

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


def compare_pipeline(
    conn: Connection, project: Project, pipeline: str, base: str
) -> dict[str, Any]:
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
    comparison = compare_runs(
        head,
        _named(conn, project, [int(i) for i in head["run_id"]]),
        base_runs,
        _named(conn, project, [int(i) for i in base_runs["run_id"]]),
        quarantined=quarantined_now(conn, project),
    )
    answer = asdict(comparison)
    for name in ("wall", "test_time"):
        # Unknown (NaN) travels as null, never as a number JSON cannot carry.
        answer[name] = {k: None if v != v else v for k, v in answer[name].items()}
    answer.update(
        pipeline=pipeline,
        base=base,
        cells=sorted(f"{job or ''}|{key or ''}" for job, key in cells),
    )
    return answer
