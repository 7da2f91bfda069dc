"""Set-based reads that return the small frames `analysis` works on (the repository):
runs, results, the test dictionary, one test's history and the filter choices.

The rollup tables are read in app/db/rollup_reads.py, the COPY paths live in
app/db/copy_frames.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from typing import Any

import numpy as np
import pandas as pd
from psycopg import sql
from sqlalchemy import Connection, text

from analysis.filters import Filters, filter_facts
from app.db.copy_frames import copy_frame, copy_numeric_frame, read_frame
from model.frames import (
    OUTCOMES,
    RUN_COLUMNS,
    RUN_TEXT_COLUMNS,
    label_pair,
    parse_labels_key,
    text_or_none,
    unnamed,
)
from pgcodec.binary_copy import PgType


def cell_where(
    filters: Filters, alias: str = "", *, day_alias: str | None = None, bucket: str = "day"
) -> tuple[sql.Composed, dict[str, Any]]:
    """SQL for the run-level filters; test-level ones (markers, files) apply in pandas.

    `alias` names the table holding job/branch/labels_key (run or cell), `day_alias` the one
    holding project_id and the `bucket` column (day, or week in weekly rollups) when that is
    another table (a rollup). Values are `%(name)s` parameters, in the returned dict.
    """

    def column(table: str, name: str) -> sql.Identifier:
        return sql.Identifier(table, name) if table else sql.Identifier(name)

    cells = alias
    days = day_alias if day_alias is not None else alias
    clauses: list[sql.Composable] = [sql.SQL("{} = %(project)s").format(column(days, "project_id"))]
    params: dict[str, Any] = {}
    if filters.since is not None:
        clauses.append(sql.SQL("{} >= %(since)s").format(column(days, bucket)))
        params["since"] = filters.since
    if filters.until is not None:
        clauses.append(sql.SQL("{} <= %(until)s").format(column(days, bucket)))
        params["until"] = filters.until
    if filters.branches:
        clauses.append(sql.SQL("{} = ANY(%(branches)s)").format(column(cells, "branch")))
        params["branches"] = list(filters.branches)
    if filters.jobs:
        clauses.append(sql.SQL("{} = ANY(%(jobs)s)").format(column(cells, "job")))
        params["jobs"] = list(filters.jobs)
    for i, (key, values) in enumerate(sorted(filters.labels.items())):
        # labels_key is "k=v,k2=v2" with "," and "=" escaped inside keys and values, so its
        # pairs split exactly; a run matches when one of the wanted pairs is among them.
        clauses.append(
            sql.SQL("string_to_array({}, ',') && CAST({} AS text[])").format(
                column(cells, "labels_key"), sql.Placeholder(f"label{i}")
            )
        )
        params[f"label{i}"] = [label_pair(key, value) for value in values]
    return sql.SQL(" AND ").join(clauses), params


def load_test_dictionary(
    conn: Connection, project_id: int, *, param_values: bool = True
) -> pd.DataFrame:
    """Every test case of a project with its attributes, indexed by test id.

    Through the CSV path (copy_frame): psycopg's per-row decoding of text and text[] cost
    10x more. Decoding param_values (JSON) is then most of the cost: rollups skip it.
    """
    values = sql.SQL("param_values::text" if param_values else "NULL::text")
    frame = copy_frame(
        conn,
        sql.SQL(
            """
        SELECT id AS test_id, nodeid, file, classname, function, params,
            {values} AS param_values,
            CASE WHEN markers IS NOT NULL
                THEN {prefix} || array_to_string(markers, {sep}) END
                AS markers
        FROM test_case WHERE project_id = %(p)s
        """
        ).format(values=values, prefix=sql.Literal(_MARKERS_PREFIX), sep=sql.Literal(_MARKER_SEP)),
        {"p": project_id},
        dtypes=dict.fromkeys(
            ("nodeid", "file", "classname", "function", "params", "param_values", "markers"),
            "object",
        ),
    )
    # Nameless test cases stored before parsers left them out: nothing can plan or show them.
    frame = frame[~unnamed(frame["nodeid"]).to_numpy()]
    frame = frame.replace({np.nan: None})
    # Decoded once per distinct marker set; the last slot (code -1) is "markers unknown".
    codes, sets = pd.factorize(frame["markers"], use_na_sentinel=True)
    decoded = np.empty(len(sets) + 1, dtype=object)
    for code, joined in enumerate(sets.tolist()):
        decoded[code] = _marker_tuple(joined)
    frame["markers"] = pd.Series(decoded[codes], index=frame.index, dtype=object)
    if param_values:
        frame["param_values"] = frame["param_values"].map(json.loads, na_action="ignore")
    return frame.set_index("test_id")


# A marker set travels as one text value: a prefix (so the empty set is not NULL) and the
# names joined by a character no marker name holds.
_MARKERS_PREFIX = "m:"
_MARKER_SEP = "\x1f"


def _marker_tuple(joined: str) -> tuple[str, ...]:
    names = joined[len(_MARKERS_PREFIX) :]
    return tuple(sorted(names.split(_MARKER_SEP))) if names else ()


def tests_version(conn: Connection, project_id: int) -> tuple[int, int]:
    """Changes whenever a test case of the project is added, changed or removed: (project,
    counter). Triggers on test_case bump the counter in the writing transaction (migration
    `sharedstate`), so this is one primary-key read, whatever the number of tests."""
    version = conn.execute(
        text("SELECT version FROM test_case_version WHERE project_id = :p"), {"p": project_id}
    ).scalar_one_or_none()
    return project_id, int(version or 0)


def narrow_tests(tests: pd.DataFrame, filters: Filters) -> pd.DataFrame:
    """A test dictionary narrowed by the test-level filters (markers, file globs)."""
    if not filters.has_test_filters:
        return tests
    probe = tests.copy()
    probe["day"] = pd.NaT
    probe["labels_key"] = ""
    only_tests = Filters(
        markers=filters.markers, exclude_markers=filters.exclude_markers, files=filters.files
    )
    return tests.loc[filter_facts(probe, only_tests).index]


# The numeric run columns of the job model: float64, NaN when unknown.
_RUN_MEASURES = (
    "cpu_s",
    "startup_s",
    "collect_s",
    "job_wall_s",
    "collected_tests",
    "collected_files",
    "heap_objects_start",
    "heap_objects_collected",
    "heap_objects_end",
    "cpu_wait_s",
    "exit_s",
)


def load_runs(conn: Connection, project_id: int, filters: Filters) -> pd.DataFrame:
    """Runs in the window, in the analysis runs shape plus `test_s`, `tests`, `missing`."""
    where, params = cell_where(filters)
    params["project"] = project_id
    frame = read_frame(
        conn,
        sql.SQL(
            """
            SELECT id AS run_id, pipeline, job, branch, commit_sha AS commit, machine,
                started_at, wall_s, peak_rss_mib, xdist_workers, labels, labels_key, partial,
                hidden_rows, test_s, tests, missing, upload_id, cpu_s, startup_s, collect_s,
                job_wall_s, collected_tests::float8 AS collected_tests,
                collected_files::float8 AS collected_files, collect_by_file, invocation, rootdir,
                heap_objects_start::float8 AS heap_objects_start,
                heap_objects_collected::float8 AS heap_objects_collected,
                heap_objects_end::float8 AS heap_objects_end, cpu_wait_s, malloc, platform,
                plan_id, exit_s
            FROM run WHERE {} ORDER BY started_at
            """
        ).format(where),
        params,
    )
    frame["labels"] = frame["labels"].map(
        lambda v: v if isinstance(v, dict) else json.loads(v) if v else {}
    )
    frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True)
    # Unknown stays NaN (never 0): a JUnit-only run has none of the job model's measures.
    for column in _RUN_MEASURES:
        frame[column] = pd.to_numeric(frame[column]).astype("float64")
    frame["collect_by_file"] = frame["collect_by_file"].map(
        lambda v: v if isinstance(v, dict) else json.loads(v) if isinstance(v, str) else None
    )
    for column in RUN_TEXT_COLUMNS:
        frame[column] = text_or_none(frame[column])
    # plan_id: a run that executed a plan is no job of today's pipeline (todays_runs).
    extra = ["labels_key", "test_s", "tests", "missing", "upload_id", "plan_id"]
    return frame[[*RUN_COLUMNS, *extra]]


_RESULT_SPEC: tuple[tuple[str, PgType], ...] = (
    ("run_id", "int8"),
    ("test_id", "int8"),
    ("outcome_code", "int2"),
    ("duration_s", "float8"),
    ("setup_s", "float8"),
    ("call_s", "float8"),
    ("teardown_s", "float8"),
    ("attempts", "int4"),
    ("last_attempt_s", "float8"),
    ("flaky", "bool"),
    ("peak_rss_mib", "float8"),
    ("cpu_s", "float8"),
    ("seq", "float8"),
    ("gc_s", "float8"),
    ("heap_scans", "float8"),
    ("heap_objects", "float8"),
    ("cpu_wait_s", "float8"),
)
# The outcome travels as its index in OUTCOMES (text would need the CSV path).
_OUTCOME_CODE = sql.SQL("CASE tr.outcome {} END::int2").format(
    sql.SQL(" ").join(
        sql.SQL("WHEN {} THEN {}").format(sql.Literal(outcome), sql.Literal(code))
        for code, outcome in enumerate(OUTCOMES)
    )
)


def run_days(conn: Connection, project_id: int, run_ids: Sequence[int]) -> list[tuple[int, date]]:
    """(run id, day) of the project's runs among `run_ids`."""
    rows = conn.execute(
        text("SELECT id, day FROM run WHERE project_id = :project AND id = ANY(:ids)"),
        {"project": project_id, "ids": list(run_ids)},
    ).all()
    return [(int(run_id), day) for run_id, day in rows]


def load_run_results(
    conn: Connection, project_id: int, runs: Sequence[tuple[int, date]]
) -> pd.DataFrame:
    """The results of (run id, day) runs, per test id, without test attributes.

    Without the per-result texts (`worker`, `message` are None): no engine reads them, and
    the numeric columns alone travel as binary COPY, several times faster than text.
    """
    # The runs' days as constants let Postgres prune the day partitions of other runs.
    frame = copy_numeric_frame(
        conn,
        sql.SQL(
            """
            SELECT tr.run_id, tr.test_id, {} AS outcome_code,
                coalesce(tr.duration_s, 'NaN') AS duration_s,
                coalesce(tr.setup_s, 'NaN') AS setup_s, coalesce(tr.call_s, 'NaN') AS call_s,
                coalesce(tr.teardown_s, 'NaN') AS teardown_s, tr.attempts::int4 AS attempts,
                coalesce(tr.last_attempt_s, 'NaN') AS last_attempt_s, tr.flaky,
                coalesce(tr.peak_rss_mib::float8, 'NaN') AS peak_rss_mib,
                coalesce(tr.cpu_s, 'NaN') AS cpu_s, coalesce(tr.seq::float8, 'NaN') AS seq,
                coalesce(tr.gc_s, 'NaN') AS gc_s,
                coalesce(tr.heap_scans::float8, 'NaN') AS heap_scans,
                coalesce(tr.heap_objects::float8, 'NaN') AS heap_objects,
                coalesce(tr.cpu_wait_s, 'NaN') AS cpu_wait_s
            FROM test_result tr
            WHERE tr.project_id = %(project)s AND tr.day = ANY(%(days)s)
                AND tr.run_id = ANY(%(runs)s)
            """
        ).format(_OUTCOME_CODE),
        {
            "project": project_id,
            "days": sorted({day for _id, day in runs}),
            "runs": [run_id for run_id, _day in runs],
        },
        _RESULT_SPEC,
    )
    outcomes = np.array(OUTCOMES, dtype=object)
    frame.insert(2, "outcome", outcomes[frame.pop("outcome_code").to_numpy()])
    frame["worker"] = None
    frame["message"] = None
    return frame


def with_tests(filters: Filters, results: pd.DataFrame, tests: pd.DataFrame) -> pd.DataFrame:
    """load_run_results rows joined with their tests' attributes (load_test_dictionary with
    param values; not changed), narrowed by the test-level filters: what the engines read."""
    tests = narrow_tests(tests, filters)
    # Per test, not per result: a test's rows share its one markers list.
    tests = tests.assign(markers=tests["markers"].map(lambda m: list(m) if m is not None else None))
    joined = results.join(tests, on="test_id", how="inner")
    joined["suite"] = None
    return joined.reset_index(drop=True)


def labels_of(runs: pd.DataFrame) -> dict[str, list[str]]:
    """Label keys and their values seen in a runs frame (for filter menus)."""
    found: dict[str, set[str]] = {}
    for key in runs["labels_key"].dropna().unique() if "labels_key" in runs else []:
        for k, v in parse_labels_key(key).items():
            found.setdefault(k, set()).add(v)
    return {k: sorted(v) for k, v in sorted(found.items())}


# Test pages read one test's raw results; a cap keeps a years-old daily test page fast.
TEST_HISTORY_LIMIT = 5000


def load_test_case(conn: Connection, project_id: int, nodeid: str) -> dict[str, Any] | None:
    """One test case's attributes by nodeid, or None."""
    row = (
        conn.execute(
            text(
                "SELECT id AS test_id, nodeid, file, classname, function, params, param_values, "
                "markers, first_seen FROM test_case WHERE project_id = :p AND nodeid = :n"
            ),
            {"p": project_id, "n": nodeid},
        )
        .mappings()
        .first()
    )
    return dict(row) if row else None


def load_test_history(
    conn: Connection,
    project_id: int,
    test_id: int,
    filters: Filters,
    *,
    limit: int = TEST_HISTORY_LIMIT,
) -> pd.DataFrame:
    """One test's results in the window (run-level filters), newest first, with their run."""
    where, params = cell_where(filters, "r")
    params.update(project=project_id, test=test_id, limit=limit)
    frame = read_frame(
        conn,
        sql.SQL(
            """
            SELECT r.id AS run_id, r.pipeline, r.job, r.branch, r.commit_sha AS commit,
                r.labels_key, r.started_at, tr.outcome, tr.duration_s, tr.setup_s, tr.call_s,
                tr.teardown_s, tr.attempts, tr.flaky, tr.message
            FROM test_result tr JOIN run r ON r.id = tr.run_id AND r.day = tr.day
            WHERE tr.test_id = %(test)s AND tr.project_id = %(project)s AND {}
            ORDER BY r.started_at DESC LIMIT %(limit)s
            """
        ).format(where),
        params,
    )
    frame["started_at"] = pd.to_datetime(frame["started_at"], utc=True)
    frame["flaky"] = frame["flaky"].astype(bool)
    for column in ("duration_s", "setup_s", "call_s", "teardown_s"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    return frame


def filter_choices(conn: Connection, project_id: int) -> dict[str, list[str]]:
    """The values a project's filter menus offer: jobs, branches, labels (k=v), markers."""
    cells = conn.execute(
        text("SELECT DISTINCT job, branch, labels_key FROM cell WHERE project_id = :p"),
        {"p": project_id},
    ).all()
    markers = conn.execute(
        text(
            "SELECT DISTINCT m FROM test_case, unnest(markers) AS m "
            "WHERE project_id = :p ORDER BY m"
        ),
        {"p": project_id},
    ).scalars()
    labels = {f"{k}={v}" for _, _, key in cells for k, v in parse_labels_key(key or "").items()}
    return {
        "job": sorted({str(job) for job, _, _ in cells if job}),
        "branch": sorted({str(branch) for _, branch, _ in cells if branch}),
        "label": sorted(labels),
        "marker": [str(m) for m in markers],
    }
