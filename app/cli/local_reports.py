"""Read report files from disk into analysis frames, for the offline commands."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np
import pandas as pd

from analysis.ci.pytest_selection import Invocation, recorded_invocation
from app.cli.options import chosen_runner
from ingest.merge import merge_reports
from ingest.model import ParsedReport, ReportParseError, SessionInfo
from ingest.parsers import parse_report
from ingest.run_files import run_groups
from model.frames import RUN_COLUMNS, RUN_TEXT_COLUMNS, text_or_none

# The job name `--history` gives every run (`laptime plan`, `laptime size`): the files are
# repeated runs of one job, so they are one job, not the jobs of one pipeline.
HISTORY_JOB = "tests"


@dataclass(frozen=True)
class LocalData:
    """Results and runs frames built from local files: one run per group of files that
    belong to one run (ingest.run_files), usually one file."""

    results: pd.DataFrame
    runs: pd.DataFrame
    reports: list[ParsedReport]  # one per file, in the order given
    # Per run (the runs frame's rows, in order): the indices of its files in `reports`.
    members: list[list[int]]


def read_report_file(path: Path, fmt: str = "auto") -> ParsedReport:
    """Parse one file, turning every failure into a one-line ClickException (exit 1)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot read: {exc.strerror or exc}") from exc
    try:
        return parse_report(data, filename=str(path), format=fmt, runner=chosen_runner())
    except ReportParseError as exc:
        raise click.ClickException(exc.describe()) from exc


def load_local(paths: Sequence[str | Path], fmt: str = "auto") -> LocalData:
    """Parse every file and join them into one results frame and one runs frame: files of one
    run (ingest.run_files, the server's rule too) are merged as the server merges them."""
    reports = [read_report_file(Path(raw), fmt) for raw in paths]
    frames: list[pd.DataFrame] = []
    run_rows: list[dict[str, object]] = []
    groups = run_groups(reports, [str(p) for p in paths])
    for run_id, members in enumerate(groups, start=1):
        merged = merge_reports([reports[i] for i in members])
        frames.append(merged.results.assign(run_id=run_id))
        session = merged.session
        run_rows.append(
            {
                "run_id": run_id,
                "pipeline": "local",
                "job": Path(paths[members[0]]).stem,
                "branch": None,
                "commit": None,
                "machine": None,
                "started_at": pd.to_datetime(session.started_at, utc=True, errors="coerce")
                if session.started_at
                else pd.NaT,
                "wall_s": session.wall_s if session.wall_s is not None else np.nan,
                "peak_rss_mib": session.peak_rss_mib
                if session.peak_rss_mib is not None
                else np.nan,
                "xdist_workers": session.xdist_workers or 1,
                "labels": {},
                "partial": merged.partial,
                "hidden_rows": merged.hidden_rows,
                **run_measures(session),
            }
        )
    results = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    runs = pd.DataFrame(run_rows, columns=list(RUN_COLUMNS))
    for column in RUN_TEXT_COLUMNS:
        runs[column] = text_or_none(runs[column])
    return LocalData(results=results, runs=runs, reports=reports, members=groups)


def run_measures(session: SessionInfo) -> dict[str, object]:
    """The runs frame's job-model columns from a report's session; NaN/None unknown."""

    def number(value: float | None) -> float:
        return float(value) if value is not None else np.nan

    return {
        "cpu_s": number(session.cpu_s),
        "startup_s": number(session.startup_s),
        "collect_s": number(session.collect_s),
        "job_wall_s": number(session.job_wall_s),
        "collected_tests": number(session.collected_tests),
        "collected_files": number(session.collected_files),
        "collect_by_file": session.collect_by_file,
        "invocation": session.invocation,
        "rootdir": session.rootdir,
        "heap_objects_start": number(session.heap_objects_start),
        "heap_objects_collected": number(session.heap_objects_collected),
        "heap_objects_end": number(session.heap_objects_end),
        "cpu_wait_s": number(session.cpu_wait_s),
        "exit_s": number(session.exit_s),
        "malloc": session.malloc,
        "platform": session.platform,
    }


def local_runner(data: LocalData) -> str:
    """The runner of the reports (the one behind most results; pytest when none is known)."""
    counts: dict[str, int] = {}
    for report in data.reports:
        counts[report.runner] = counts.get(report.runner, 0) + len(report.results)
    return max(sorted(counts), key=lambda r: counts[r]) if counts else "pytest"


def history_invocation(
    data: LocalData, mode: str = "auto", rootdir: str | None = None
) -> Invocation:
    """How the history's pytest ran: the options given, else what the reports' sessions
    recorded (`session.invocation`, `session.rootdir`; the last report that says), else paths."""
    recorded = [(r.session.invocation, r.session.rootdir) for r in data.reports]
    return recorded_invocation(recorded, mode, rootdir)
