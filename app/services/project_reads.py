"""What the API and the dashboard read for a project: queries in, analysis results out.

Both edges call these functions, so a number on a page and in the API cannot disagree.

Why one module (about 600 lines): the kept frames (`SharedFrames`, `FrameCache`) and the reads
that fill and use them change together: a read's cache key is its filters and the data version
the cache keeps, and the cache folds a project's new runs into what the reads last loaded.
Apart, every read would reach into the cache's internals.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any, TypeVar, cast

import pandas as pd
from sqlalchemy import Connection, Engine, text

from analysis.filters import Filters
from analysis.rollups.pipelines import PipelineSummary, daily_trend, job_summary, pipeline_summary
from analysis.rollups.shares import DEFAULT_WITHIN, LABEL_PREFIX, Rollup, rollup
from app.db.repository import (
    load_run_results,
    load_runs,
    load_test_dictionary,
    run_days,
    tests_version,
)
from app.db.rollup_reads import FactPart, facts_from_sums, load_fact_sums, load_file_facts
from app.services.hot_reads import HotRead, HotReads, hot_reads

# Which rollup-table columns a dimension needs kept apart.
_CELL_COLUMN = {"job": "job", "machine": "machine", "branch": "branch"}


def window_filters(days: int | None, **kwargs: object) -> Filters:
    """Filters with a default window of the last `days` days (None keeps all history)."""
    if days is not None and kwargs.get("since") is None:
        until = kwargs.get("until") or datetime.now(UTC).date()
        kwargs["since"] = until - timedelta(days=days - 1)  # type: ignore[operator]
    return Filters(**kwargs)  # type: ignore[arg-type]


def split_columns(*dimensions: str | None) -> tuple[str, ...]:
    """The cell columns the facts must keep to answer rollups by these dimensions."""
    wanted: list[str] = []
    for dim in dimensions:
        if dim is None:
            continue
        if dim.startswith(LABEL_PREFIX):
            wanted.append("labels_key")
        elif dim in _CELL_COLUMN:
            wanted.append(_CELL_COLUMN[dim])
    return tuple(dict.fromkeys(wanted))


class _Loading:
    """A key one thread is loading, and how many others wait for it."""

    def __init__(self) -> None:
        self.done = threading.Event()
        self.waiting = 0


class SharedFrames:
    """Frames and results kept between requests (least recently used first out).

    A key carries the project's data version, so an ingest or a prune makes the old frames
    unreachable rather than stale; they age out.
    """

    def __init__(
        self,
        max_entries: int = 256,
        max_bytes: int = 256 * 1024 * 1024,
        wait_for_load_s: float = 120.0,
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.wait_for_load_s = wait_for_load_s
        self._frames: OrderedDict[tuple[object, ...], tuple[Any, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._loading: dict[tuple[object, ...], _Loading] = {}

    def get(
        self,
        key: tuple[object, ...],
        load: Callable[[], T],
        keep: Callable[[T], bool] | None = None,
    ) -> T:
        """The value under `key`, loading it when absent (and keeping it unless `keep` says
        no, e.g. for an answer cut short by a time limit)."""
        while True:
            with self._lock:
                if key in self._frames:
                    self._frames.move_to_end(key)
                    return cast(T, self._frames[key][0])
                loading = self._loading.get(key)
                if loading is None:
                    loading = self._loading[key] = _Loading()
                    break
                loading.waiting += 1
            # Another reader (or the warmer) is computing this key: one computation, not two.
            # When it fails or keeps nothing, the loop loads the key here; after a long wait
            # too (never stuck behind a load that does not end).
            finished = loading.done.wait(self.wait_for_load_s)
            with self._lock:
                loading.waiting -= 1
            if not finished:
                return load()
        try:
            value = load()
            if keep is None or keep(value):
                self._put(key, value)
            return value
        finally:
            with self._lock:
                del self._loading[key]
            loading.done.set()

    def waiting(self, key: tuple[object, ...]) -> int:
        """How many readers are waiting for another's load of `key`."""
        with self._lock:
            loading = self._loading.get(key)
            return 0 if loading is None else loading.waiting

    def get_many(
        self,
        keys: Sequence[tuple[object, ...]],
        load_missing: Callable[[list[tuple[object, ...]]], dict[tuple[object, ...], T]],
    ) -> list[T]:
        """The values under `keys`, those absent loaded by one `load_missing` call."""
        with self._lock:
            found = {key: self._frames[key][0] for key in keys if key in self._frames}
            for key in found:
                self._frames.move_to_end(key)
        missing = [key for key in keys if key not in found]
        if missing:
            loaded = load_missing(missing)
            for key, value in loaded.items():
                self._put(key, value)
            found.update(loaded)
        return [cast(T, found[key]) for key in keys]

    def peek(self, key: tuple[object, ...]) -> Any | None:
        """The value under `key`, or None (nothing is loaded)."""
        with self._lock:
            if key not in self._frames:
                return None
            self._frames.move_to_end(key)
            return self._frames[key][0]

    def put(self, key: tuple[object, ...], value: object) -> None:
        """Keep `value` under `key`, replacing what was there."""
        with self._lock:
            if key in self._frames:
                self._bytes -= self._frames.pop(key)[1]
        self._put(key, value)

    def _put(self, key: tuple[object, ...], value: object) -> None:
        """Keep `value` (unless another thread did first), then drop the oldest over budget."""
        size = _approx_bytes(value)
        with self._lock:
            if key not in self._frames:
                self._frames[key] = (value, size)
                self._bytes += size
            while self._frames and (
                len(self._frames) > self.max_entries or self._bytes > self.max_bytes
            ):
                _, (_, dropped) = self._frames.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        """Forget every frame."""
        with self._lock:
            self._frames.clear()
            self._bytes = 0


def _approx_bytes(value: object) -> int:
    """Shallow memory of a frame, or of a rollup's rows (object cells count as pointers)."""
    frame = value.rows if isinstance(value, Rollup) else value
    if isinstance(frame, tuple) and frame and isinstance(frame[0], pd.DataFrame):
        frame = frame[0]  # a kept part and the data version it holds
    if isinstance(frame, pd.DataFrame):
        return int(frame.memory_usage(index=True).sum())
    return 1024


T = TypeVar("T")

# Per engine, so per database: project, run and test ids repeat across databases, and one
# process may read several (a test suite, an operator's tools).
_FRAMES_OF_ENGINE: weakref.WeakKeyDictionary[Engine, SharedFrames] = weakref.WeakKeyDictionary()
_FRAMES_LOCK = threading.Lock()


def budget_frames(engine: Engine, max_bytes: int) -> SharedFrames:
    """Keep at most `max_bytes` of frames for the database of `engine` in this process."""
    with _FRAMES_LOCK:
        frames = _FRAMES_OF_ENGINE.get(engine)
        if frames is None:
            frames = _FRAMES_OF_ENGINE[engine] = SharedFrames(max_bytes=max_bytes)
        frames.max_bytes = max_bytes
        return frames


def shared_frames(conn: Connection, shared: SharedFrames | None = None) -> SharedFrames:
    """The frames kept between requests for the database `conn` reads (`shared` when given)."""
    if shared is not None:
        return shared
    with _FRAMES_LOCK:
        frames = _FRAMES_OF_ENGINE.get(conn.engine)
        if frames is None:
            frames = _FRAMES_OF_ENGINE[conn.engine] = SharedFrames()
        return frames


def data_version(
    conn: Connection, project_id: int, *, before: date | None = None
) -> tuple[int, int, int]:
    """Changes whenever a run of the project (dated before `before`, when given) is stored or
    pruned: (project, runs, last run)."""
    dated = "" if before is None else " AND day < :before"
    count, last = conn.execute(
        text(f"SELECT count(*), coalesce(max(id), 0) FROM run WHERE project_id = :p{dated}"),
        {"p": project_id, "before": before},
    ).one()
    return project_id, int(count), int(last)


def _tests_stored(
    conn: Connection, project_id: int, since: date, after: int, upto: int
) -> tuple[int, ...]:
    """The tests runs with ids in (after, upto] stored results of, dated from `since` on. Only
    the partitions of the days the run table dates those runs are read: scanning every one of
    the open week's costs what the week holds."""
    bounds = {"p": project_id, "after": after, "upto": upto}
    days = (
        conn.execute(
            text(
                "SELECT DISTINCT day FROM run WHERE project_id = :p AND id > :after AND id <= :upto"
                " AND day >= :since"
            ),
            {**bounds, "since": since},
        )
        .scalars()
        .all()
    )
    if not days:
        return ()
    rows = conn.execute(
        text(
            "SELECT DISTINCT test_id FROM test_result WHERE project_id = :p AND day = ANY(:days)"
            " AND run_id > :after AND run_id <= :upto"
        ),
        {**bounds, "days": list(days)},
    ).scalars()
    return tuple(int(test_id) for test_id in rows)


# Folding re-reads the touched tests' rows through an id list: worth it up to this many new
# results, or a quarter of the kept rows when that is more.
MIN_FOLDED_RESULTS = 5_000


def _runs_between(conn: Connection, project_id: int, after: int, upto: int) -> tuple[int, int]:
    """How many runs of the project have ids in (after, upto], and their results."""
    runs, results = conn.execute(
        text(
            "SELECT count(*), coalesce(sum(tests), 0) FROM run"
            " WHERE project_id = :p AND id > :after AND id <= :upto"
        ),
        {"p": project_id, "after": after, "upto": upto},
    ).one()
    return int(runs), int(results)


def _fold(kept: pd.DataFrame, touched: tuple[int, ...], fresh: pd.DataFrame) -> pd.DataFrame | None:
    """`kept` rows with those of the `touched` tests replaced by `fresh` (all the current rows
    of those tests); None when the two cannot be stacked as they are (a new cell widened a
    categorical column)."""
    if list(kept.columns) != list(fresh.columns):
        return None
    for column in kept.columns:
        if isinstance(kept[column].dtype, pd.CategoricalDtype) and kept[column].dtype != (
            fresh[column].dtype
        ):
            return None
    stay = kept[~kept["test_id"].isin(touched).to_numpy()]
    return pd.concat([stay, fresh], ignore_index=True)


def kept_test_dictionary(
    conn: Connection,
    project_id: int,
    *,
    param_values: bool = False,
    shared: SharedFrames | None = None,
) -> pd.DataFrame:
    """load_test_dictionary, kept until a test case of the project is added or changed
    (uploads of known tests leave it as it is). Callers must not change the frame."""
    version = tests_version(conn, project_id)
    return shared_frames(conn, shared).get(
        ("tests", version, param_values),
        lambda: load_test_dictionary(conn, project_id, param_values=param_values),
        # A commit between reading the version and the rows: the rows may be newer than the
        # key says, so they are used for this answer but not kept under the older key.
        keep=lambda _: tests_version(conn, project_id) == version,
    )


def run_results(
    conn: Connection,
    project_id: int,
    run_ids: Sequence[int],
    shared: SharedFrames | None = None,
) -> pd.DataFrame:
    """The results of runs (load_run_results rows), kept per run: a stored run never changes,
    so after an upload only the new run is read, whatever the data version."""

    def load(keys: list[tuple[object, ...]]) -> dict[tuple[object, ...], pd.DataFrame]:
        ids = [int(cast(int, key[2])) for key in keys]
        frame = load_run_results(conn, project_id, run_days(conn, project_id, ids))
        parts = dict(tuple(frame.groupby("run_id", sort=False)))
        empty = frame.iloc[:0]
        return {
            key: parts.get(run_id, empty).reset_index(drop=True)
            for key, run_id in zip(keys, ids, strict=True)
        }

    keys = [("run-results", project_id, run_id) for run_id in run_ids]
    frames = shared_frames(conn, shared).get_many(keys, load)
    kept = [frame for frame in frames if len(frame)]
    if not kept:
        return frames[0] if frames else load_run_results(conn, project_id, [])
    return pd.concat(kept, ignore_index=True)


class FrameCache:
    """Frames already read, so a page asking several rollups of one window reads each rollup
    table once. Made by `for_project`, it also reuses frames of earlier requests for as long
    as the project's data has not changed."""

    def __init__(
        self, shared: SharedFrames | None = None, version: tuple[int, ...] | None = None
    ) -> None:
        self._frames: dict[tuple[object, ...], Any] = {}
        self._shared = shared if version is not None else None
        self._version = version

    @classmethod
    def for_project(
        cls, conn: Connection, project_id: int, shared: SharedFrames | None = None
    ) -> FrameCache:
        """A cache backed by `shared` (default: the database's) under the project's current
        data version."""
        return cls(shared_frames(conn, shared), data_version(conn, project_id))

    def get(
        self,
        key: tuple[object, ...],
        load: Callable[[], T],
        keep: Callable[[T], bool] | None = None,
    ) -> T:
        """The value (frame or result) under `key`, loading it on first use; a value `keep`
        refuses is returned but not kept."""
        if key in self._frames:
            return cast(T, self._frames[key])
        if self._shared is not None:
            value = self._shared.get((self._version, *key), load, keep)
        else:
            value = load()
        if keep is None or keep(value):
            self._frames[key] = value
        return value

    @property
    def version(self) -> tuple[int, ...] | None:
        """The data version the kept frames are read under (None: nothing is kept)."""
        return self._version

    def get_recent(
        self,
        conn: Connection,
        project_id: int,
        key: tuple[object, ...],
        since: date,
        load: Callable[[tuple[int, ...] | None], pd.DataFrame],
    ) -> pd.DataFrame:
        """Per-test rows of buckets from `since` on, kept with the data version they hold:
        after runs were only added, `load(test ids)` reads just the rows of the tests those runs
        stored from `since` on, folded over the kept rows; anything else (a prune) reads them
        afresh with `load(None)`. Rows must carry `test_id`.
        """
        if self._shared is None or self._version is None:
            return load(None)
        version = self._version
        shared_key = ("recent", *key)
        frame: pd.DataFrame | None = None
        kept = self._shared.peek(shared_key)
        if kept is not None:
            kept_frame, kept_version = kept
            if kept_version == version:
                return cast(pd.DataFrame, kept_frame)
            added, results = _runs_between(conn, project_id, kept_version[2], version[2])
            # Only runs added since (no prune), and few results next to the kept rows: a
            # commit of most of the window is read whole (one scan beats a large id list).
            if kept_version[1] + added == version[1] and results <= max(
                MIN_FOLDED_RESULTS, len(kept_frame) // 4
            ):
                touched = _tests_stored(conn, project_id, since, kept_version[2], version[2])
                frame = _fold(kept_frame, touched, load(touched))
        if frame is None:
            frame = load(None)
        # A commit since the version was read: the rows may hold more than it says.
        if data_version(conn, project_id) == version:
            self._shared.put(shared_key, (frame, version))
        return frame

    def get_settled(
        self,
        key: tuple[object, ...],
        version: Callable[[], tuple[int, ...]],
        load: Callable[[], T],
    ) -> T:
        """Like `get`, but kept under `version()` (of part of the data) instead of the
        project's data version; without shared frames, loaded afresh."""
        if self._shared is None:
            return load()
        return self._shared.get(("settled", version(), *key), load)


def project_rollup(
    conn: Connection,
    project_id: int,
    filters: Filters,
    *,
    by: str,
    within: str | None = None,
    sort: str = "total_s",
    descending: bool = True,
    limit: int | None = None,
    cache: FrameCache | None = None,
    hot: HotReads | None = None,
    noted: bool = True,
) -> Rollup:
    """A rollup over the rollup tables (pass one FrameCache for several rollups of a page).
    The read is noted in `hot` (default: this process's for the database), so a commit
    refreshes it off the request path (app.services.read_warmer); `noted` False for the
    refresh itself."""
    cache = cache or FrameCache.for_project(conn, project_id)
    key = ("rollup", filters.key, by, within, sort, descending, limit)
    answer = cache.get(
        key,
        lambda: _compute_rollup(
            conn, project_id, filters, by, within, sort, descending, limit, cache
        ),
    )
    if noted:  # only answerable questions: a refresh must not redo a refused one
        (hot or hot_reads(conn.engine)).note(
            project_id, HotRead(filters, by, within, sort, descending, limit)
        )
    return answer


def _compute_rollup(
    conn: Connection,
    project_id: int,
    filters: Filters,
    by: str,
    within: str | None,
    sort: str,
    descending: bool,
    limit: int | None,
    cache: FrameCache,
) -> Rollup:
    parent = within if within is not None else DEFAULT_WITHIN.get(by)
    runs = cache.get(("runs", filters.key), lambda: load_runs(conn, project_id, filters))
    if _file_grain(by) and (parent is None or _file_grain(parent)) and not filters.has_test_filters:
        # Totals and shares of cell and file dimensions read the per-file rollup table.
        split = split_columns(by, parent)
        file_facts = cache.get(
            ("file", filters.key, split),
            lambda: _in_parts(
                conn,
                project_id,
                cache,
                ("file", filters.key, split),
                lambda part: load_file_facts(conn, project_id, filters, split_by=split, part=part),
            ),
        )
        return rollup(
            file_facts.drop(columns=["tests"]),
            by,
            within=within,
            sort=sort,
            descending=descending,
            limit=limit,
            runs=runs,
            # Per-test figures (tests, p50, p95) need the tests of each key: facts split only
            # by what the key itself needs (by=file reads the whole-project per-test facts).
            test_facts=_test_facts(
                conn, project_id, filters, split_columns(by), cache, per_bucket=False
            ),
        )
    facts = _test_facts(conn, project_id, filters, split_columns(by, parent), cache)
    return rollup(
        facts, by, within=within, sort=sort, descending=descending, limit=limit, runs=runs
    )


def _test_facts(
    conn: Connection,
    project_id: int,
    filters: Filters,
    split: tuple[str, ...],
    cache: FrameCache,
    *,
    per_bucket: bool = True,
) -> pd.DataFrame:
    """Per-test facts of the window, keeping the cell columns `split` apart (and the days
    or weeks unless `per_bucket` is False: enough for per-test figures, far fewer rows)."""
    # Without a split the facts have no bucket-free form: the weekly table is already small.
    per_bucket = per_bucket or not split
    return cache.get(
        ("test", filters.key, split, per_bucket),
        lambda: facts_from_sums(
            filters,
            _in_parts(
                conn,
                project_id,
                cache,
                ("test-sums", filters.key, split, per_bucket),
                lambda part: load_fact_sums(
                    conn, project_id, filters, split_by=split, part=part, per_bucket=per_bucket
                ),
                # Split sums read this week's days from the daily table: only today's rows
                # are re-read after an upload dated today (a week of them costs far more).
                boundary=None if per_bucket else datetime.now(UTC).date(),
                by_test=True,
            ),
            kept_test_dictionary(conn, project_id),
            split_by=split,
        ),
    )


def _in_parts(
    conn: Connection,
    project_id: int,
    cache: FrameCache,
    key: tuple[object, ...],
    load: Callable[[FactPart], pd.DataFrame],
    *,
    boundary: date | None = None,
    by_test: bool = False,
) -> pd.DataFrame:
    """A window's rollup rows read in two parts. Rows of buckets before `boundary` (default:
    this week's Monday, right for weekly tables) are kept until a run dated before it is
    stored or pruned; uploads after it (nearly all of them) then re-read only those rows, and
    of per-test rows (`by_test`) only those of the tests the new runs stored."""
    boundary = boundary or open_week_start()
    settled = cache.get_settled(
        (*key, boundary),
        lambda: data_version(conn, project_id, before=boundary),
        lambda: load(FactPart(boundary, settled=True)),
    )
    if by_test:
        recent = cache.get_recent(
            conn,
            project_id,
            (*key, boundary),
            boundary,
            lambda tests: load(FactPart(boundary, settled=False, tests=tests)),
        )
    else:
        recent = load(FactPart(boundary, settled=False))
    if recent.empty:
        return settled
    if settled.empty:
        return recent
    return pd.concat([settled, recent], ignore_index=True)


def open_week_start(today: date | None = None) -> date:
    """Monday of the current UTC week: rollup buckets before it take no more uploads, mostly."""
    day = today or datetime.now(UTC).date()
    return day - timedelta(days=day.weekday())


def _file_grain(dimension: str) -> bool:
    return dimension == "file" or dimension in _CELL_COLUMN or dimension.startswith(LABEL_PREFIX)


@dataclass(frozen=True)
class PipelineReport:
    """Pipelines, jobs and the daily trend of one window."""

    pipelines: PipelineSummary
    jobs: pd.DataFrame
    trend: pd.DataFrame


def project_pipelines(conn: Connection, project_id: int, filters: Filters) -> PipelineReport:
    """Developer wait and machine time per pipeline, per job, and per day."""
    runs = load_runs(conn, project_id, filters)
    return PipelineReport(
        pipelines=pipeline_summary(runs), jobs=job_summary(runs), trend=daily_trend(runs)
    )
