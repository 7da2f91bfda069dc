"""The read answers' schemas against the domain they are built from: a column or field added,
removed or renamed in the rollups fails here instead of drifting (issue 28)."""

from __future__ import annotations

import dataclasses

import pandas as pd

from analysis.rollups.pipelines import JOB_COLUMNS, PIPELINE_COLUMNS, daily_trend
from analysis.rollups.shares import ROW_COLUMNS, DataCompleteness
from app.schemas import reads
from tests.analysis.test_pipelines import make_runs


def test_row_models_name_the_domain_columns_in_order() -> None:
    assert tuple(reads.RollupRow.model_fields) == ROW_COLUMNS
    assert tuple(reads.PipelineRow.model_fields) == PIPELINE_COLUMNS
    assert tuple(reads.JobRow.model_fields) == JOB_COLUMNS


def test_trend_day_names_the_trend_columns_in_order() -> None:
    runs = make_runs(
        job=["a"],
        pipeline=["p1"],
        started_at=pd.to_datetime(pd.Series(["2024-03-01T10:00Z"]), utc=True),
        wall_s=[100.0],
        test_s=[90.0],
    )
    assert tuple(reads.TrendDay.model_fields) == tuple(daily_trend(runs).columns)


def test_completeness_model_is_the_domain_object_with_its_verdict() -> None:
    fields = [f.name for f in dataclasses.fields(DataCompleteness)]
    assert list(reads.Completeness.model_fields) == [*fields, "complete"]
