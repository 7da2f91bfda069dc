"""Where the time goes: totals, shares and percentiles per dimension; pipeline wait and setup."""

from analysis.rollups.pipelines import PipelineSummary, daily_trend, job_summary, pipeline_summary
from analysis.rollups.shares import Rollup, data_completeness, rollup

__all__ = [
    "PipelineSummary",
    "Rollup",
    "daily_trend",
    "data_completeness",
    "job_summary",
    "pipeline_summary",
    "rollup",
]
