"""Set-based reads that return the small frames `analysis` works on."""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pandas as pd
from sqlalchemy import Connection, text

from analysis.frames import FACT_COLUMNS, RUN_COLUMNS, parse_labels_key


@dataclass(frozen=True)
class Filters:
    """The filters every query accepts (they live in URLs, so they are plain values)."""

    days: int = 30
    until: date | None = None
    branch: str | None = None
    job: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    marker: str | None = None
    file_glob: str | None = None

    @property
    def window(self) -> tuple[date, date]:
        """Inclusive first and last day."""
        last = self.until or datetime.now(UTC).date()
        return last - timedelta(days=self.days - 1), last


def _cell_where(filters: Filters, alias: str = "") -> tuple[str, dict[str, Any]]:
    prefix = f"{alias}." if alias else ""
    first, last = filters.window
    clauses = [f"{prefix}project_id = :project", f"{prefix}day BETWEEN :first AND :last"]
    params: dict[str, Any] = {"first": first, "last": last}
    if filters.branch is not None:
        clauses.append(f"{prefix}branch = :branch")
        params["branch"] = filters.branch
    if filters.job is not None:
        clauses.append(f"{prefix}job = :job")
        params["job"] = filters.job
    for i, (key, value) in enumerate(sorted(filters.labels.items())):
        # labels_key is "k=v,k2=v2" sorted; match one pair exactly.
        clauses.append(
            f"(',' || {prefix}labels_key || ',') LIKE :label{i}"
        )
        params[f"label{i}"] = f"%,{key}={value},%"
    return " AND ".join(clauses), params


def test_dictionary(conn: Connection, project_id: int) -> pd.DataFrame:
    """Every test case of a project with its attributes, indexed by test id."""
    frame = pd.read_sql_query(
        text(
            "SELECT id AS test_id, nodeid, file, classname, function, params, param_values, "
            "markers FROM test_case WHERE project_id = :p"
        ),
        conn,
        params={"p": project_id},
    )
    frame["markers"] = frame["markers"].map(
        lambda m: tuple(sorted(m)) if isinstance(m, list) else None
    )
    return frame.set_index("test_id")


def _apply_test_filters(frame: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    if filters.marker is not None:
        marker = filters.marker
        frame = frame[frame["markers"].map(lambda m: m is not None and marker in m)]
    if filters.file_glob is not None:
        pattern = filters.file_glob
        files = frame["file"].dropna().unique()
        keep = {f for f in files if fnmatch.fnmatch(f, pattern)}
        frame = frame[frame["file"].isin(keep)]
    return frame


def load_facts(
    conn: Connection, project_id: int, filters: Filters, *, split_by: tuple[str, ...] = ()
) -> pd.DataFrame:
    """Daily facts per test from the rollup table, also split by job/labels when asked."""
    where, params = _cell_where(filters)
    params["project"] = project_id
    extra = [c for c in ("job", "machine", "branch", "labels_key") if c in split_by]
    group = ", ".join(["test_id", "day", *extra])
    sums = pd.read_sql_query(
        text(
            f"""
            SELECT {group}, sum(runs)::bigint AS runs, sum(known)::bigint AS known,
                sum(total_s) AS total_s, max(max_s) AS max_s, sum(setup_s) AS setup_s,
                sum(call_s) AS call_s, sum(teardown_s) AS teardown_s,
                sum(failures)::bigint AS failures, sum(flaky)::bigint AS flaky,
                max(peak_rss_mib) AS peak_rss_mib
            FROM rollup_daily WHERE {where} GROUP BY {group}
            """
        ),
        conn,
        params=params,
    )
    tests = _apply_test_filters(test_dictionary(conn, project_id), filters)
    facts = sums.join(tests, on="test_id", how="inner")
    for col in ("job", "machine", "branch", "labels_key"):
        if col not in facts:
            facts[col] = None
    facts["day"] = pd.to_datetime(facts["day"])
    return facts[list(FACT_COLUMNS)].reset_index(drop=True)


def load_runs(conn: Connection, project_id: int, filters: Filters) -> pd.DataFrame:
    """Runs in the window, in the analysis runs shape plus `test_s`, `tests`, `missing`."""
    where, params = _cell_where(filters)
    params["project"] = project_id
    frame = pd.read_sql_query(
        text(
            f"""
            SELECT id AS run_id, pipeline, job, branch, commit_sha AS commit, machine,
                started_at, wall_s, peak_rss_mib, xdist_workers, labels, labels_key, partial,
                hidden_rows, test_s, tests, missing, upload_id
            FROM run WHERE {where} ORDER BY started_at
            """
        ),
        conn,
        params=params,
    )
    frame["labels"] = frame["labels"].map(
        lambda v: v if isinstance(v, dict) else json.loads(v) if v else {}
    )
    frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True)
    return frame[[*RUN_COLUMNS, "labels_key", "test_s", "tests", "missing", "upload_id"]]


def load_results(
    conn: Connection, project_id: int, filters: Filters, *, max_runs_per_job: int | None = None
) -> pd.DataFrame:
    """Raw results joined with test attributes, for the engines that need every run."""
    where, params = _cell_where(filters, "r")
    params["project"] = project_id
    limit_clause = ""
    if max_runs_per_job is not None:
        limit_clause = (
            "AND r.id IN (SELECT id FROM (SELECT id, row_number() OVER "
            "(PARTITION BY job, labels_key ORDER BY started_at DESC) AS n FROM run r "
            f"WHERE {where}) ranked WHERE n <= :max_runs)"
        )
        params["max_runs"] = max_runs_per_job
    frame = pd.read_sql_query(
        text(
            f"""
            SELECT tr.run_id, tr.test_id, tr.outcome, tr.duration_s, tr.setup_s, tr.call_s,
                tr.teardown_s, tr.attempts, tr.flaky, tr.peak_rss_mib::float8 AS peak_rss_mib,
                tr.worker, tr.message
            FROM test_result tr JOIN run r ON r.id = tr.run_id AND r.day = tr.day
            WHERE {where} {limit_clause}
            """
        ),
        conn,
        params=params,
    )
    tests = _apply_test_filters(test_dictionary(conn, project_id), filters)
    joined = frame.join(tests, on="test_id", how="inner")
    joined["suite"] = None
    joined["markers"] = joined["markers"].map(lambda m: list(m) if m is not None else None)
    return joined.reset_index(drop=True)


def labels_of(runs: pd.DataFrame) -> dict[str, list[str]]:
    """Label keys and their values seen in a runs frame (for filter menus)."""
    found: dict[str, set[str]] = {}
    for key in runs["labels_key"].dropna().unique() if "labels_key" in runs else []:
        for k, v in parse_labels_key(key).items():
            found.setdefault(k, set()).add(v)
    return {k: sorted(v) for k, v in sorted(found.items())}
