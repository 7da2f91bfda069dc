"""Merge the reports of one CI job into one results frame (pure).

A job may upload a JUnit file and a `--durations` log together: outcomes come from JUnit (or
laptime JSON), per-phase times from the durations report. Identity is the nodeid. Such an
outcome report covers what the durations report lacks: its "no outcomes" warning and its
hidden rows (partial data) no longer apply. Which files are one run: ingest.run_files.

Executions, not names: two reports of one format in one job are two runs (two tox
environments, two pytest invocations), so a nodeid already seen in an earlier report of that
format is another execution and gets the same " #k" suffix as inside a report. Reports of
different formats (the JUnit and the laptime JSON of one pytest run) describe the same
executions: the first report's row is kept, with the plugin's measures (MEASURE_COLUMNS) filled
in.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ingest.model import MEASURE_COLUMNS, ParsedReport, SessionInfo, empty_results
from ingest.parsers.durations import OUTCOMES_UNKNOWN_WARNING
from ingest.parsers.executions import number_executions

PHASES = ("setup_s", "call_s", "teardown_s")


@dataclass(frozen=True)
class MergedRun:
    """The results of one job and what the merge learned about them."""

    results: pd.DataFrame
    session: SessionInfo
    warnings: list[str] = field(default_factory=list)
    partial: bool = False
    hidden_rows: int = 0
    file_derived: bool = False  # some report's files are derived from class names


def merge_reports(reports: list[ParsedReport]) -> MergedRun:
    """Combine reports of one job: outcome reports first, durations fill in the phases."""
    outcome_reports = [r for r in reports if r.format != "durations"]
    # A durations report lacks outcomes and hides its fastest phases; an outcome report of
    # the same run (JUnit, laptime JSON) gives both: nothing is missing then.
    covered = any(not r.results.empty for r in outcome_reports)
    warnings = [
        w
        for r in reports
        for w in r.warnings
        if not (covered and r.format == "durations" and w == OUTCOMES_UNKNOWN_WARNING)
    ]
    outcome_frames = _executions_by_format([r for r in reports if r.format != "durations"])
    duration_frames = [r.results for r in reports if r.format == "durations"]
    base = _concat(outcome_frames)
    # No durations report (the usual upload): no empty frame to build and test.
    timings = _concat(duration_frames) if duration_frames else None
    if timings is None or (timings.empty and not base.empty):
        merged = base
    elif base.empty:
        merged = timings
    else:
        merged = _fill_phases(base, timings)
    before = len(merged)
    # Distinct nodeids (one report, the usual case) have nothing to merge or drop.
    unique = merged["nodeid"].is_unique
    measured = None if unique else _measures_by_nodeid(merged)
    if not unique:
        merged = merged.drop_duplicates(subset="nodeid", keep="first")
    merged = merged.reset_index(drop=True)
    if measured is not None:
        # The JUnit row kept for a test the laptime JSON also reported still gets the
        # plugin's CPU, order and heap measures: only the plugin measures them.
        for column in MEASURE_COLUMNS:
            merged[column] = merged[column].fillna(merged["nodeid"].map(measured[column]))
    if len(merged) < before:
        warnings.append(
            f"{before - len(merged)} results repeated a nodeid already in this job; kept the first"
        )
    session = _first_session(reports)
    return MergedRun(
        results=merged,
        session=session,
        warnings=warnings,
        partial=any(r.partial for r in (outcome_reports if covered else reports)),
        hidden_rows=sum(r.hidden_rows or 0 for r in (outcome_reports if covered else reports)),
        file_derived=any(r.file_derived for r in reports),
    )


def _executions_by_format(reports: list[ParsedReport]) -> list[pd.DataFrame]:
    """One frame per format, its reports' repeated nodeids numbered as separate executions."""
    by_format: dict[str, list[pd.DataFrame]] = {}
    for report in reports:
        by_format.setdefault(report.format, []).append(report.results)
    frames = []
    for same_format in by_format.values():
        frame = _concat(same_format)
        if len(same_format) > 1 and not frame["nodeid"].is_unique:
            nodeids = frame["nodeid"].to_numpy(dtype=object, copy=True)
            number_executions(nodeids, np.zeros(len(nodeids), dtype=bool))
            frame = frame.assign(nodeid=nodeids)
        frames.append(frame)
    return frames


def _measures_by_nodeid(frame: pd.DataFrame) -> pd.DataFrame | None:
    """The first known MEASURE_COLUMNS per nodeid, when a repeated nodeid has some."""
    repeated = frame["nodeid"].duplicated(keep=False)
    known = frame[list(MEASURE_COLUMNS)].notna().any(axis=1)
    rows = frame.loc[repeated & known, ["nodeid", *MEASURE_COLUMNS]]
    if rows.empty:
        return None
    return rows.groupby("nodeid", sort=False).first()


def _concat(frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if not f.empty]
    if not frames:
        return empty_results()
    if len(frames) == 1:
        return frames[0]
    return pd.concat(frames, ignore_index=True)


def _fill_phases(base: pd.DataFrame, timings: pd.DataFrame) -> pd.DataFrame:
    timings = timings.drop_duplicates(subset="nodeid", keep="first").set_index("nodeid")
    merged = base.copy()
    for phase in (*PHASES, "duration_s"):
        from_timings = merged["nodeid"].map(timings[phase])
        merged[phase] = merged[phase].where(merged[phase].notna(), from_timings)
    # Tests the durations report saw but the outcome report did not (e.g. a crashed xdist
    # worker) are kept: their time was spent.
    extra = timings.loc[~timings.index.isin(merged["nodeid"])].reset_index()
    if not extra.empty:
        merged = pd.concat([merged, extra[merged.columns]], ignore_index=True)
    known_phases = merged[list(PHASES)].notna().any(axis=1)
    phase_sum = merged[list(PHASES)].sum(axis=1, min_count=1)
    merged["duration_s"] = np.where(
        merged["duration_s"].isna() & known_phases, phase_sum, merged["duration_s"]
    )
    return merged


def _first_session(reports: list[ParsedReport]) -> SessionInfo:
    for report in reports:
        if report.format == "laptime-json":
            return report.session
    return reports[0].session if reports else SessionInfo()
