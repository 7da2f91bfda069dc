"""An injected history uploaded to a live server as laptime JSON reports, one per run."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pandas as pd

from tests.conftest import LiveServer
from tests.flaky.injected import Injected
from tests.uploads import upload_all


def _number(value: Any) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else value


def run_report(rows: pd.DataFrame, workers: int) -> bytes:
    """One run's results as a laptime JSON report; a rerun's phases are its last attempt's."""
    tests = []
    for row in rows.itertuples():
        test: dict[str, Any] = {
            "nodeid": row.nodeid,
            "file": row.file,
            "outcome": row.outcome,
            "duration_s": float(row.duration_s),
            "attempts": int(row.attempts),
            "flaky": bool(row.flaky),
        }
        last = _number(row.last_attempt_s)
        if last is not None:
            test.update(setup_s=0.0, call_s=float(last), teardown_s=0.0)
        tests.append(test)
    session = {"xdist_workers": workers}
    doc = {"format": "laptime-json", "version": 1, "session": session, "tests": tests}
    return json.dumps(doc).encode()


def _uploads(injected: Injected) -> Iterator[tuple[str, bytes, dict[str, Any]]]:
    by_run = dict(tuple(injected.results.groupby("run_id", sort=False)))
    for run in injected.runs.itertuples():
        fields = {
            "job": run.job,
            "pipeline": run.pipeline,
            "commit": run.commit,
            "branch": run.branch,
            "machine": run.machine,
            "started_at": pd.Timestamp(run.started_at).isoformat(),
            "wall_s": repr(float(run.wall_s)),
            "label": [f"{k}={v}" for k, v in sorted(run.labels.items())],
        }
        yield "report.json", run_report(by_run[run.run_id], int(run.xdist_workers)), fields


def upload_history(server: LiveServer, token: str, injected: Injected) -> None:
    """Upload every run of the history and wait until the worker stored them all."""
    upload_all(server, token, _uploads(injected))
