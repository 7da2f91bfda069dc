"""Write one merged run into Postgres: results by binary COPY, the test dictionary and the
per-file rollups each by one statement over array parameters (no staging table, nothing read
back). The per-test rollups are added later from the results (ingest.rollup_compaction).

Everything happens on the caller's connection inside the caller's transaction (the worker
owns it), so a run is stored completely or not at all.

Why one module (over 500 lines): its steps (partition, run row, test cases, results, rollups)
run in a fixed order on one connection inside one transaction, and reading them in one file is
how that order is checked; the COPY codecs already live in pgcodec.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import psycopg
from pandas.util import hash_array

from ingest.merge import MergedRun
from ingest.model import SessionInfo
from ingest.parsers.row_checks import durations_in_range
from ingest.pg_arrays import Float8Array, Int8Array
from ingest.run_time import RunStart, run_start
from model.frames import fact_value_arrays, labels_key, named_results, sum_facts_by_code
from pgcodec.binary_copy import PgType, encode_binary_copy
from pgcodec.text_values import MAX_NAME_BYTES, cut_name, cut_names, storable_column, storable_text

_RESULT_SPEC: tuple[tuple[str, PgType], ...] = (
    ("project_id", "int8"),
    ("day", "date"),
    ("run_id", "int8"),
    ("test_id", "int8"),
    ("outcome", "text"),
    ("duration_s", "float8"),
    ("setup_s", "float8"),
    ("call_s", "float8"),
    ("teardown_s", "float8"),
    ("attempts", "int2"),
    ("last_attempt_s", "float8"),
    ("flaky", "bool"),
    ("peak_rss_mib", "float4"),
    ("cpu_s", "float8"),
    ("seq", "int4"),
    ("gc_s", "float8"),
    ("heap_scans", "int4"),
    ("heap_objects", "int8"),
    ("cpu_wait_s", "float8"),
    ("worker", "text"),
)


class KnownTests:
    """Memo of the test cases one database connection has already written, per project.

    It only saves work: a test it does not know is upserted (ON CONFLICT makes that safe when
    another worker wrote it first). Attribute changes are detected by a hash of the markers and
    whether parametrize values are present. One per connection, never per process: project ids
    and test ids repeat across databases, and another thread's writes may still roll back.
    """

    def __init__(self) -> None:
        # Per project: known ids, sorted, and the attribute hash of each.
        self._known: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def unknown_or_changed(self, project_id: int, ids: np.ndarray, attrs: np.ndarray) -> np.ndarray:
        """Boolean mask of the rows that must be written to the dictionary."""
        known = self._known.get(project_id)
        if known is None or len(known[0]) == 0:
            return np.ones(len(ids), dtype=bool)
        known_ids, known_attrs = known
        at = np.minimum(np.searchsorted(known_ids, ids), len(known_ids) - 1)
        mask: np.ndarray = (known_ids[at] != ids) | (known_attrs[at] != attrs)
        return mask

    def remember(self, project_id: int, ids: np.ndarray, attrs: np.ndarray) -> None:
        """Record rows as written (after the transaction that wrote them committed or not)."""
        old_ids, old_attrs = self._known.get(
            project_id, (np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64))
        )
        # New rows first, so for an id seen twice the latest attributes win in unique().
        all_ids = np.concatenate([np.asarray(ids, dtype=np.int64)[::-1], old_ids])
        all_attrs = np.concatenate([np.asarray(attrs, dtype=np.int64)[::-1], old_attrs])
        unique_ids, first = np.unique(all_ids, return_index=True)
        self._known[project_id] = (unique_ids, all_attrs[first])

    def clear(self) -> None:
        """Forget everything: after a rollback, the remembered writes did not happen."""
        self._known.clear()


@dataclass(frozen=True)
class RunMetadata:
    """What the uploader told us about the CI job (all optional but the job name)."""

    job: str
    pipeline: str | None = None
    commit: str | None = None
    branch: str | None = None
    machine: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    started_at: datetime | None = None
    wall_s: float | None = None
    peak_rss_mib: float | None = None
    # When the upload arrived: a report timestamp far from it is not believed (run_time.py).
    # None (direct callers storing history) trusts the report's own timestamp.
    received_at: datetime | None = None
    backfill: bool = False
    runner: str | None = None  # the upload's `runner` field: overrides detection
    # The plan this job ran: the upload's `plan_id` field, else its `plan=<id>` label.
    plan_id: str | None = None
    # The CI job's wall up to the upload, from the client (LAPTIME_JOB_STARTED_AT or
    # the CI service's job start); the report's own session.job_wall_s otherwise.
    job_wall_s: float | None = None
    # The commits before this run's, newest first, as the client's git saw them (its
    # first-parent history): what lies between two runs' commits (docs/changes.md).
    first_parents: tuple[str, ...] = ()
    # `sha:number` of those commits whose message names the request they came in.
    merged_requests: tuple[str, ...] = ()

    def executed_plan(self) -> str | None:
        """The id of the plan this run executed, if it names one."""
        return self.plan_id or self.labels.get("plan") or None


@dataclass(frozen=True)
class StoreResult:
    """Counts of what one run stored."""

    run_id: int
    results: int
    new_tests: int
    missing_durations: int
    # Per-row problems fixed while storing (cut names), for the upload's warnings.
    warnings: list[str] = field(default_factory=list)
    cell_id: int = 0
    branch: str | None = None
    # The stored results with their test ids, and the run's measures (wall_s, job_wall_s,
    # cpu_s, xdist_workers): what change detection reads without reading them back.
    stored: pd.DataFrame | None = None
    measures: dict[str, float | None] = field(default_factory=dict)


# Names that are indexed (test_case nodeid, per-file rollup keys) or shown as one: cut.
_NAME_COLUMNS = ("nodeid", "file", "classname", "function", "params")
_TEXT_COLUMNS = (*_NAME_COLUMNS, "outcome", "worker", "suite", "message")


def storable_results(results: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The results with every text storable and every name within MAX_NAME_BYTES, and a
    warning per column that had names cut. A report never fails for one row's text."""
    warnings: list[str] = []
    # Parsers leave these out already (ingest.parsers.row_checks); a report built any other
    # way meets the same rules before a row reaches a table or a sum.
    fixed, dropped = named_results(results)
    if dropped:
        warnings.append(f"{dropped} result(s) with no test name left out")
    # Columns are replaced once at the end, and only the ones that changed: a report that
    # needs nothing (the usual case) costs a scan per column, not a frame rebuild per check.
    changed: dict[str, Any] = {}
    for column in ("duration_s", "setup_s", "call_s", "teardown_s", "last_attempt_s"):
        seconds = fixed[column].to_numpy()
        in_range = durations_in_range(seconds, warnings, what=column)
        if in_range is not seconds:
            changed[column] = in_range
    for column in _TEXT_COLUMNS:
        text = fixed[column]
        storable = storable_column(text)
        if storable is not text:
            changed[column] = storable
    # NOT NULL in test_case: a named test whose function is unknown stores it as "".
    function = changed.get("function", fixed["function"])
    if function.isna().any():
        changed["function"] = function.fillna("")
    for column in _NAME_COLUMNS:
        names = changed.get(column, fixed[column])
        names, cut = cut_names(names)
        if cut:
            changed[column] = names
            warnings.append(
                f"{cut} {column} value(s) longer than {MAX_NAME_BYTES} bytes were cut to "
                f"{MAX_NAME_BYTES} bytes (ending in ~ and a hash of the full value)"
            )
    fixed = fixed.assign(**changed) if changed else fixed.copy(deep=False)
    # Markers are made storable where each distinct set is rendered (_pg_array), parametrize
    # values where each is dumped to JSON (_param_json): per row here would cost more.
    return fixed, warnings


def _param_json(value: Any) -> str | None:
    """jsonb text of a parametrize-values dict; None when there is none."""
    if not isinstance(value, dict):
        return None
    dumped = json.dumps(value)
    # jsonb refuses \u0000 and lone surrogates as much as text does (json.dumps escapes both).
    if "\\u0000" in dumped or "\\ud" in dumped:
        dumped = json.dumps(_storable_json(value), ensure_ascii=False)
    return dumped


def _storable_json(value: Any) -> Any:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        return {storable_text(str(k)): _storable_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_storable_json(v) for v in value]
    return value


def storable_metadata(meta: RunMetadata) -> RunMetadata:
    """Run metadata with its texts storable and the cell key's names cut."""

    def clean(value: str | None) -> str | None:
        return None if value is None else cut_name(storable_text(value))

    return replace(
        meta,
        job=clean(meta.job) or "",
        pipeline=clean(meta.pipeline),
        commit=clean(meta.commit),
        branch=clean(meta.branch),
        machine=clean(meta.machine),
        plan_id=clean(meta.plan_id),
        labels={storable_text(k): storable_text(v) for k, v in meta.labels.items()},
    )


def compute_test_ids(project_id: int, nodeids: pd.Series) -> np.ndarray:
    """Deterministic 63-bit test ids: SipHash of the nodeid keyed by the project."""
    key = f"laptime{project_id:09d}"[-16:].rjust(16, "0")
    # Nodeids of one report are distinct: categorizing first would only add a pass.
    hashed = hash_array(nodeids.to_numpy(dtype=object), hash_key=key, categorize=False)
    ids: np.ndarray = (hashed >> np.uint64(1)).astype(np.int64)
    return ids


# NOTIFY on this channel is delivered at commit (never for a rolled-back transaction): the
# web processes refresh the answers their readers keep (app.services.read_warmer).
DATA_CHANNEL = "laptime_data"
ALL_PROJECTS = "*"


def notify_data_changed(conn: psycopg.Connection[Any], project_id: int | None) -> None:
    """Tell listeners, at commit, that the project's data (None: every project's) changed."""
    payload = ALL_PROJECTS if project_id is None else str(project_id)
    conn.execute("SELECT pg_notify(%s, %s)", (DATA_CHANNEL, payload))


@dataclass(frozen=True)
class PreparedRun:
    """One run whose run row is written, with what its shared writes need (dictionary,
    results and rollups): its storable results, their test ids, its day and cell."""

    run_id: int
    project_id: int
    day: date
    cell_id: int
    branch: str | None
    results: pd.DataFrame
    ids: np.ndarray
    warnings: list[str]
    measures: dict[str, float | None]

    def stored(self, new_tests: int) -> StoreResult:
        """What storing it did, once its rows are written."""
        if self.results.empty:
            return StoreResult(
                run_id=self.run_id, results=0, new_tests=0, missing_durations=0,
                warnings=self.warnings, cell_id=self.cell_id, branch=self.branch,
                measures=self.measures,
            )  # fmt: skip
        return StoreResult(
            run_id=self.run_id,
            results=len(self.results),
            new_tests=new_tests,
            missing_durations=int(self.results["duration_s"].isna().sum()),
            warnings=self.warnings,
            cell_id=self.cell_id,
            branch=self.branch,
            stored=self.results.assign(test_id=self.ids),
            measures=self.measures,
        )


def store_run(
    conn: psycopg.Connection[Any],
    *,
    project_id: int,
    upload_id: int,
    meta: RunMetadata,
    merged: MergedRun,
    known_tests: KnownTests | None = None,
) -> StoreResult:
    """Insert the run, its results, new test cases and the per-file rollups (the run is left
    for ingest.rollup_compaction to add to the per-test ones). `known_tests` is the
    memo of this connection (cleared by the caller when its transaction rolls back); without
    one every test case is upserted."""
    run = prepare_run(conn, project_id=project_id, upload_id=upload_id, meta=meta, merged=merged)
    if run.results.empty:
        return run.stored(0)
    memo = KnownTests() if known_tests is None else known_tests
    new_tests = _upsert_test_cases(conn, project_id, run.day, run.results, run.ids, memo)
    _copy_results(
        conn, project_id=project_id, day=run.day, run_id=run.run_id, results=run.results,
        ids=run.ids,
    )  # fmt: skip
    _store_file_rollups(
        conn, project_id=project_id, day=run.day, cell_id=run.cell_id, results=run.results
    )
    return run.stored(new_tests)


def prepare_run(
    conn: psycopg.Connection[Any],
    *,
    project_id: int,
    upload_id: int,
    meta: RunMetadata,
    merged: MergedRun,
    storable: tuple[pd.DataFrame, list[str]] | None = None,
) -> PreparedRun:
    """Write what is the run's own (its day's partition, its cell, its run row) and make its
    results storable (`storable`: storable_results of them, made already); the rows shared
    with other runs (dictionary, results, rollups) are written by store_run, or for several
    runs at once by ingest.store_batch."""
    results, warnings = storable or storable_results(merged.results)
    meta = storable_metadata(meta)
    if meta.received_at is None:
        start = RunStart(meta.started_at or _session_start(merged) or datetime.now(UTC))
    else:
        start = run_start(
            sent=meta.started_at,
            reported=_session_start(merged),
            received=meta.received_at,
            backfill=meta.backfill,
        )
    if start.warning:
        warnings = [start.warning, *warnings]
    started_at = start.at
    day = started_at.astimezone(UTC).date()
    wall_s = meta.wall_s if meta.wall_s is not None else merged.session.wall_s
    peak, peak_warning = _job_peak(meta, merged.session)
    if peak_warning:
        warnings = [*warnings, peak_warning]
    durations = results["duration_s"]
    lkey = cut_name(labels_key(meta.labels))

    _ensure_partition(conn, day)
    cell_id = _cell_id(conn, project_id, meta, lkey)
    run_values: dict[str, Any] = {
        "project": project_id,
        "upload": upload_id,
        "cell": cell_id,
        "pipeline": meta.pipeline,
        "job": meta.job,
        "commit": meta.commit,
        "branch": meta.branch,
        "machine": meta.machine,
        "labels": json.dumps(meta.labels),
        "labels_key": lkey,
        "started_at": started_at,
        "day": day,
        "wall_s": wall_s,
        "test_s": float(durations.sum()) if len(results) else 0.0,
        "tests": len(results),
        "peak": peak,
        "workers": merged.session.xdist_workers or 1,
        "partial": merged.partial,
        "hidden": merged.hidden_rows,
        "missing": int(durations.isna().sum()),
        # Runner: the upload's override, else what detection found in the reports.
        "runner": meta.runner or merged.session.runner,
        "file_derived": merged.file_derived,
        "plan_id": meta.executed_plan(),
        "first_parents": list(meta.first_parents) or None,
        "merged_requests": list(meta.merged_requests) or None,
        **_session_measures(merged.session, meta),
    }
    run_id = _insert_run(conn, run_values)
    measures = {
        "wall_s": wall_s,
        "job_wall_s": run_values["job_wall_s"],
        "cpu_s": run_values["cpu_s"],
        "xdist_workers": run_values["workers"],
    }
    notify_data_changed(conn, project_id)
    ids = (
        compute_test_ids(project_id, results["nodeid"])
        if len(results)
        else np.empty(0, dtype=np.int64)
    )
    return PreparedRun(
        run_id=run_id, project_id=project_id, day=day, cell_id=cell_id, branch=meta.branch,
        results=results, ids=ids, warnings=warnings, measures=measures,
    )  # fmt: skip


def _job_peak(meta: RunMetadata, session: SessionInfo) -> tuple[float | None, str | None]:
    """The run's peak memory: the upload's, else the report's; never a cgroup's.

    Plugins before the job model's measures fell back to the container cgroup's `memory.peak`
    (its lifetime maximum over every process in it: 996 MiB from an earlier pip install where the
    tests peaked at 281 MiB) and labelled it `peak_rss_source: cgroup`;
    their upload sent the same number.
    """
    peak = meta.peak_rss_mib if meta.peak_rss_mib is not None else session.peak_rss_mib
    if session.peak_rss_source == "cgroup" and peak is not None and peak == session.peak_rss_mib:
        return None, (
            f"the report's job peak ({peak:g} MiB) is its container cgroup's lifetime peak, "
            "not the test processes': not stored as the run's peak memory"
        )
    return peak, None


def _session_measures(session: SessionInfo, meta: RunMetadata) -> dict[str, Any]:
    """The run columns the job model reads; None where the reports did not say."""
    by_file = session.collect_by_file
    return {
        "cpu_s": session.cpu_s,
        "startup_s": session.startup_s,
        "collect_s": session.collect_s,
        "job_wall_s": meta.job_wall_s if meta.job_wall_s is not None else session.job_wall_s,
        "exit_s": session.exit_s,
        "collected_tests": session.collected_tests,
        "collected_files": session.collected_files,
        # File names are report text: made storable like every other name.
        "collect_by_file": json.dumps({storable_text(k): v for k, v in by_file.items()})
        if by_file is not None
        else None,
        "invocation": session.invocation,
        "rootdir": None if session.rootdir is None else storable_text(session.rootdir),
        "heap_objects_start": session.heap_objects_start,
        "heap_objects_collected": session.heap_objects_collected,
        "heap_objects_end": session.heap_objects_end,
        "cpu_wait_s": session.cpu_wait_s,
        "malloc": session.malloc,  # one of MALLOC_STATES: the parser drops anything else
        "platform": None if session.platform is None else storable_text(session.platform),
    }


def _session_start(merged: MergedRun) -> datetime | None:
    raw = merged.session.started_at
    if not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def result_partition(day: date) -> str:
    """The name of the test_result partition of `day`."""
    return f"test_result_{day:%Y%m%d}"


def _ensure_partition(conn: psycopg.Connection[Any], day: date) -> None:
    name = result_partition(day)
    exists = conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()
    if exists and exists[0]:
        return
    # Serialise creation: two workers adding the same day's partition would otherwise race.
    conn.execute("SELECT pg_advisory_xact_lock(727002)")
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF test_result "
        f"FOR VALUES FROM ('{day.isoformat()}') TO ('{(day + timedelta(days=1)).isoformat()}')"
    )


def _cell_id(conn: psycopg.Connection[Any], project_id: int, meta: RunMetadata, lkey: str) -> int:
    key = (project_id, meta.job, meta.machine or "", meta.branch or "", lkey)
    row = conn.execute(
        "INSERT INTO cell (project_id, job, machine, branch, labels_key) "
        "VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING RETURNING id",
        key,
    ).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT id FROM cell WHERE project_id = %s AND job = %s AND machine = %s "
            "AND branch = %s AND labels_key = %s",
            key,
        ).fetchone()
    assert row is not None
    return int(row[0])


def _insert_run(conn: psycopg.Connection[Any], values: dict[str, Any]) -> int:
    row = conn.execute(
        """
        INSERT INTO run (project_id, upload_id, cell_id, pipeline, job, commit_sha, branch,
            machine, labels, labels_key, started_at, day, wall_s, test_s, tests, peak_rss_mib,
            xdist_workers, partial, hidden_rows, missing, runner, file_derived, plan_id, cpu_s,
            startup_s, collect_s, job_wall_s, collected_tests, collected_files, collect_by_file,
            invocation, rootdir, heap_objects_start, heap_objects_collected, heap_objects_end,
            cpu_wait_s, malloc, platform, exit_s, first_parents, merged_requests)
        VALUES (%(project)s, %(upload)s, %(cell)s, %(pipeline)s, %(job)s, %(commit)s,
            %(branch)s, %(machine)s, %(labels)s, %(labels_key)s, %(started_at)s, %(day)s,
            %(wall_s)s, %(test_s)s, %(tests)s, %(peak)s, %(workers)s, %(partial)s, %(hidden)s,
            %(missing)s, %(runner)s, %(file_derived)s, %(plan_id)s, %(cpu_s)s, %(startup_s)s,
            %(collect_s)s, %(job_wall_s)s, %(collected_tests)s, %(collected_files)s,
            %(collect_by_file)s, %(invocation)s, %(rootdir)s, %(heap_objects_start)s,
            %(heap_objects_collected)s, %(heap_objects_end)s, %(cpu_wait_s)s,
            %(malloc)s, %(platform)s, %(exit_s)s, %(first_parents)s, %(merged_requests)s)
        RETURNING id
        """,
        values,
    ).fetchone()
    assert row is not None
    return int(row[0])


def _pg_array(values: pd.Series) -> pd.Series:
    """Render list-of-str cells as Postgres array literals; None stays NULL."""

    def as_key(value: Any) -> tuple[str, ...] | None:
        if value is None or isinstance(value, float):
            return None
        return tuple(value)

    def render(items: tuple[str, ...]) -> str:
        quoted = (
            '"' + storable_text(str(i)).replace("\\", "\\\\").replace('"', '\\"') + '"'
            for i in items
        )
        return "{" + ",".join(quoted) + "}"

    keys = values.map(as_key)
    # Few distinct marker sets exist, so each is rendered once.
    rendered = {k: render(k) for k in keys.dropna().unique()}
    return keys.map(rendered)


def _copy_rows(conn: psycopg.Connection[Any], table: str, frame: pd.DataFrame) -> None:
    """COPY a frame with free text: psycopg escapes every value for the text format, so "" stays
    "", missing (None/NaN) becomes NULL, and backslashes, tabs and newlines round-trip."""
    cells = frame.astype(object).where(frame.notna(), None)
    with conn.cursor().copy(f"COPY {table} ({', '.join(frame.columns)}) FROM STDIN") as copy:
        for row in cells.itertuples(index=False, name=None):
            copy.write_row(row)


# How a test case already known takes a new sighting: the earliest day, the latest markers,
# the first file and parametrize values known (one run's upsert and a batch's share it).
TEST_CASE_CONFLICT = """    ON CONFLICT (id) DO UPDATE SET
        first_seen = least(t.first_seen, excluded.first_seen),
        markers = coalesce(excluded.markers, t.markers),
        param_values = coalesce(excluded.param_values, t.param_values),
        file = coalesce(t.file, excluded.file)
    WHERE t.first_seen > excluded.first_seen
       OR (excluded.markers IS NOT NULL AND t.markers IS DISTINCT FROM excluded.markers)
       OR (excluded.param_values IS NOT NULL AND t.param_values IS NULL)
"""

_UPSERT_TEST_CASES = (
    """
WITH ins AS (
    INSERT INTO test_case AS t (project_id, first_seen, id, nodeid, file, classname, function,
        params, param_values, markers)
    SELECT %(project)s, %(day)s, s.id, s.nodeid, s.file, s.classname, s.function, s.params,
        s.param_values::jsonb, s.markers::text[]
    FROM unnest(%(ids)b, %(nodeid)b::text[], %(file)b::text[], %(classname)b::text[],
        %(function)b::text[], %(params)b::text[], %(param_values)b::text[], %(markers)b::text[])
        AS s(id, nodeid, file, classname, function, params, param_values, markers)
    ORDER BY s.id
"""
    + TEST_CASE_CONFLICT
    + """    RETURNING (xmax = 0) AS inserted
)
SELECT count(*) FILTER (WHERE inserted) FROM ins
"""
)


def _text_list(values: Any) -> list[str | None]:
    """A text column as the list psycopg sends as text[] (missing values as NULL)."""
    return [None if v is None or v != v else v for v in values]


def _upsert_test_cases(
    conn: psycopg.Connection[Any],
    project_id: int,
    day: date,
    results: pd.DataFrame,
    ids: np.ndarray,
    known_tests: KnownTests,
) -> int:
    rows = dictionary_rows(project_id, results, ids, known_tests)
    if rows.empty:
        return 0
    # One statement: the new rows travel as array parameters (no staging table to create,
    # empty and truncate again at commit).
    row = conn.execute(
        _UPSERT_TEST_CASES, {"project": project_id, "day": day, **dictionary_params(rows)}
    ).fetchone()
    assert row is not None
    return int(row[0])


_NO_MARKERS = "\0none"
_NO_MARKERS_HASH = int(hash_array(np.array([_NO_MARKERS], dtype=object)).astype(np.int64)[0])

DICTIONARY_TEXT = ("nodeid", "file", "classname", "function", "params", "param_values", "markers")


def dictionary_rows(
    project_id: int, results: pd.DataFrame, ids: np.ndarray, known_tests: KnownTests
) -> pd.DataFrame:
    """The run's test cases the dictionary must be sent (unknown to the memo, or with other
    markers or parametrize values): `id` and DICTIONARY_TEXT, as the upsert sends them. The
    memo remembers them as written (its owner clears it if the transaction rolls back)."""
    if results["markers"].notna().any():
        markers = _pg_array(results["markers"])
        rendered = markers.astype(object).fillna(_NO_MARKERS).to_numpy(dtype=object)
        attrs = hash_array(rendered).astype(np.int64)
    else:
        # No markers at all (every format but the plugin's): one hash for every row.
        markers = pd.Series(None, index=results.index, dtype=object)
        attrs = np.full(len(results), _NO_MARKERS_HASH, dtype=np.int64)
    has_values = results["param_values"].notna().to_numpy()
    attrs = attrs ^ has_values.astype(np.int64)
    todo = known_tests.unknown_or_changed(project_id, ids, attrs)
    if not todo.any():
        return pd.DataFrame(columns=["id", *DICTIONARY_TEXT])
    subset = results.loc[todo]
    rows = pd.DataFrame(
        {
            "id": ids[todo],
            **{
                column: subset[column].to_numpy()
                for column in ("nodeid", "file", "classname", "function", "params")
            },
            "param_values": subset["param_values"].map(_param_json).to_numpy(),
            "markers": markers.loc[todo].to_numpy(),
        }
    )
    known_tests.remember(project_id, ids[todo], attrs[todo])
    return rows


def dictionary_params(rows: pd.DataFrame) -> dict[str, Any]:
    """The upsert's array parameters for dictionary rows."""
    return {
        "ids": Int8Array(rows["id"].to_numpy(np.int64)),
        **{column: _text_list(rows[column].to_numpy()) for column in DICTIONARY_TEXT},
    }


def _copy_results(
    conn: psycopg.Connection[Any],
    *,
    project_id: int,
    day: date,
    run_id: int,
    results: pd.DataFrame,
    ids: np.ndarray,
) -> None:
    copy_result_frame(conn, result_frame(project_id, day, run_id, results, ids))


# The columns of a run's results that result_frame reads.
RESULT_COLUMNS = (
    "outcome", "duration_s", "setup_s", "call_s", "teardown_s", "attempts", "last_attempt_s",
    "flaky", "peak_rss_mib", "cpu_s", "seq", "gc_s", "heap_scans", "heap_objects",
    "cpu_wait_s", "worker", "message",
)  # fmt: skip


def result_frame(
    project_id: int, day: date, run_id: int, results: pd.DataFrame, ids: np.ndarray
) -> pd.DataFrame:
    """One run's test_result rows, in the table's column names (the integer measures as whole
    floats, NaN where unknown: copy_result_frame writes them as integers)."""
    return pd.DataFrame(
        {
            "project_id": project_id,
            "day": pd.Timestamp(day),
            "run_id": run_id,
            "test_id": ids,
            "outcome": results["outcome"].to_numpy(),
            "duration_s": results["duration_s"].to_numpy(),
            "setup_s": results["setup_s"].to_numpy(),
            "call_s": results["call_s"].to_numpy(),
            "teardown_s": results["teardown_s"].to_numpy(),
            "attempts": results["attempts"].to_numpy(),
            "last_attempt_s": results["last_attempt_s"].to_numpy(),
            "flaky": results["flaky"].to_numpy(),
            "peak_rss_mib": results["peak_rss_mib"].to_numpy(),
            "cpu_s": float_column(results["cpu_s"]),
            "seq": _whole_column(results["seq"]),
            "gc_s": float_column(results["gc_s"]),
            "heap_scans": _whole_column(results["heap_scans"]),
            "heap_objects": _whole_column(results["heap_objects"]),
            "cpu_wait_s": float_column(results["cpu_wait_s"]),
            "worker": results["worker"].to_numpy(),
            "message": results["message"].to_numpy(),
        }
    )


def copy_result_frame(conn: psycopg.Connection[Any], frame: pd.DataFrame) -> None:
    """COPY test_result rows (of one run or several): binary, but for rows with a message."""
    # Messages are free text (failures, skips): those few rows go through psycopg's row
    # writer; every other row is encoded in binary by numpy.
    with_message = frame["message"].notna().to_numpy()
    columns = ", ".join(name for name, _ in _RESULT_SPEC)
    # Rows in test_id order touch each page of the test_id index once.
    plain = frame.loc[~with_message].sort_values("test_id", kind="stable")
    if len(plain):
        payload = encode_binary_copy(plain, _RESULT_SPEC)
        with conn.cursor().copy(f"COPY test_result ({columns}) FROM STDIN (FORMAT binary)") as cp:
            cp.write(payload)
    if with_message.any():
        rows = frame.loc[with_message]
        # The text format would write a float's "3.0"; these few rows get nullable integers.
        _copy_rows(
            conn, "test_result", rows.assign(**{c: _integer_column(rows[c]) for c in _WHOLE})
        )


def float_column(values: pd.Series) -> np.ndarray:
    """A measure column as float64, NaN (NULL) where unknown."""
    return pd.to_numeric(values, errors="coerce").to_numpy(np.float64)


# Integer measures of test_result, carried as whole floats (NaN unknown) until written.
_WHOLE = ("seq", "heap_scans", "heap_objects")


def _whole_column(values: pd.Series) -> np.ndarray:
    """An integer measure as whole float64 numbers, NaN where unknown."""
    return np.round(float_column(values))


def _integer_column(values: pd.Series) -> Any:
    """An integer measure (float in the frame so that unknown is NaN) as a nullable integer,
    so the text path writes "3", not "3.0", and NaN stays NULL."""
    return pd.to_numeric(values, errors="coerce").round().astype("Int64").array


ROLLUP_VALUES = (
    "runs, known, total_s, max_s, setup_s, call_s, teardown_s, failures, flaky, peak_rss_mib"
)

# Sums of fact rows sharing a rollup key: what ROLLUP_MERGE makes of them one at a time (sum()
# of no known phase is NULL, as the merge keeps it).
ROLLUP_SUMS = """sum(runs) AS runs, sum(known) AS known, sum(total_s) AS total_s,
        max(max_s) AS max_s, sum(setup_s) AS setup_s, sum(call_s) AS call_s,
        sum(teardown_s) AS teardown_s, sum(failures) AS failures, sum(flaky) AS flaky,
        max(peak_rss_mib) AS peak_rss_mib"""

ROLLUP_MERGE = """
    runs = r.runs + excluded.runs,
    known = r.known + excluded.known,
    total_s = r.total_s + excluded.total_s,
    max_s = greatest(r.max_s, excluded.max_s),
    setup_s = CASE WHEN r.setup_s IS NULL THEN excluded.setup_s
                   ELSE r.setup_s + coalesce(excluded.setup_s, 0) END,
    call_s = CASE WHEN r.call_s IS NULL THEN excluded.call_s
                  ELSE r.call_s + coalesce(excluded.call_s, 0) END,
    teardown_s = CASE WHEN r.teardown_s IS NULL THEN excluded.teardown_s
                      ELSE r.teardown_s + coalesce(excluded.teardown_s, 0) END,
    failures = r.failures + excluded.failures,
    flaky = r.flaky + excluded.flaky,
    peak_rss_mib = greatest(r.peak_rss_mib, excluded.peak_rss_mib)
"""


def file_fact_sums(results: pd.DataFrame) -> pd.DataFrame:
    """One run's results summed per file, vectorised: `file` ("(unknown)" when not known),
    `tests` (results of the file) and the additive fact values (model.frames.fact_values: runs
    1, a missing duration unknown and 0 s, a phase no row reported NaN)."""
    codes, files = pd.factorize(results["file"].fillna("(unknown)"), use_na_sentinel=False)
    sums = sum_facts_by_code(fact_value_arrays(results), codes, len(files))
    return pd.DataFrame({"file": files, "tests": sums["runs"], **sums})


def file_sum_params(sums: pd.DataFrame) -> dict[str, Any]:
    """file_fact_sums rows as the array parameters _FILE_SUM_ROWS unnests."""
    floats = ("total_s", "max_s", "setup_s", "call_s", "teardown_s", "peak_rss_mib")
    counts = ("tests", "runs", "known", "failures", "flaky")
    return {
        "files": [str(name) for name in sums["file"]],
        **{c: Int8Array(sums[c].to_numpy(np.int64)) for c in counts},
        **{c: Float8Array(sums[c].to_numpy(np.float64)) for c in floats},
    }


# The rows of file_fact_sums sent as arrays; NaN is how an unknown float travels
# (pgcodec.binary_array), NULL from here on.
FILE_SUM_ROWS = """
    SELECT f.file, f.tests, f.runs, f.known, f.total_s, nullif(f.max_s, 'NaN') AS max_s,
        nullif(f.setup_s, 'NaN') AS setup_s, nullif(f.call_s, 'NaN') AS call_s,
        nullif(f.teardown_s, 'NaN') AS teardown_s, f.failures, f.flaky,
        nullif(f.peak_rss_mib, 'NaN') AS peak_rss_mib {extra}
    FROM unnest(%(files)s::text[], %(tests)b, %(runs)b, %(known)b, %(total_s)b, %(max_s)b,
        %(setup_s)b, %(call_s)b, %(teardown_s)b, %(failures)b, %(flaky)b,
        %(peak_rss_mib)b {extra_arrays})
        AS f(file, tests, runs, known, total_s, max_s, setup_s, call_s, teardown_s, failures,
            flaky, peak_rss_mib {extra})
"""

# The per-file rollups of one run (the per-test ones are added later by
# ingest.rollup_compaction, from the stored results): summed per file in numpy first
# (file_fact_sums), so the statement takes a row per file, not per result.
_STORE_FILE_ROLLUPS = f"""
WITH files AS MATERIALIZED (
    {FILE_SUM_ROWS.format(extra="", extra_arrays="")} ORDER BY 1
), file_daily AS (
    INSERT INTO rollup_file_daily AS r (project_id, day, cell_id, file, tests, {ROLLUP_VALUES})
    SELECT %(project)s, %(day)s, %(cell)s, file, tests, {ROLLUP_VALUES} FROM files
    ON CONFLICT (project_id, day, cell_id, file) DO UPDATE SET
        tests = greatest(r.tests, excluded.tests), {ROLLUP_MERGE}
)
INSERT INTO rollup_file_weekly AS r (project_id, week, cell_id, file, tests, {ROLLUP_VALUES})
SELECT %(project)s, %(week)s, %(cell)s, file, tests, {ROLLUP_VALUES} FROM files
ON CONFLICT (project_id, week, cell_id, file) DO UPDATE SET
    tests = greatest(r.tests, excluded.tests), {ROLLUP_MERGE}
"""


def _store_file_rollups(
    conn: psycopg.Connection[Any],
    *,
    project_id: int,
    day: date,
    cell_id: int,
    results: pd.DataFrame,
) -> None:
    week = day - timedelta(days=day.weekday())
    # The advisory locks a batch takes too (ingest.store_batch._LOCK_ALL), in the same order:
    # ingests of one cell, day or week queue on them instead of deadlocking on the per-file
    # rows they share. Both locks are one round trip.
    conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%(cell_day)s, 727003)), "
        "pg_advisory_xact_lock(hashtextextended(%(week_key)s, 727004))",
        {"cell_day": f"{project_id}:{day}:{cell_id}", "week_key": f"{project_id}:{week}"},
    )
    conn.execute(
        _STORE_FILE_ROLLUPS,
        {
            "project": project_id,
            "day": day,
            "week": week,
            "cell": cell_id,
            **file_sum_params(file_fact_sums(results)),
        },
    )
