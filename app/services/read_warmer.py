"""Kept answers refreshed after each commit, off the request path.

A commit moves the project's data version and so retires every answer kept for it; the next
reader would pay the whole recomputation (seconds after a large commit). The warmer hears the
commit (NOTIFY), and recomputes the rollups the project's readers asked for lately under the
new version. A reader who comes during the refresh waits for that one computation
(SharedFrames loads a key once). At most half of the warmer's time goes to refreshing: after
a refresh of T seconds it gathers commits for T seconds before the next, so a steady stream of
uploads cannot keep a core busy recomputing.

A project that is read also gets its backlog of runs not compacted yet compacted here once it
reaches READ_BACKLOG_RESULTS results, before the refresh: a worker busy with its queue compacts
only every 128 uploads (ingest.worker), and every per-test read adds those runs' results up
again until then. Projects nobody reads are left to the worker.
"""

from __future__ import annotations

import logging
import threading
import time

import psycopg
from prometheus_client import Counter, Histogram
from sqlalchemy import Engine

from analysis.errors import AnswerError
from app.db.data_notices import DataNotices
from app.services.hot_reads import HotReads, hot_reads
from app.services.project_reads import FrameCache, SharedFrames, project_rollup, shared_frames
from app.settings import Settings
from ingest.rollup_compaction import backlog_results, compact_backlog

log = logging.getLogger(__name__)

REFRESHES = Counter(
    "laptime_read_refreshes",
    "Kept rollup answers recomputed after a commit, by outcome.",
    ["outcome"],
)
REFRESH_SECONDS = Histogram(
    "laptime_read_refresh_seconds",
    "Seconds to refresh one project's kept answers after a commit.",
    buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
READ_COMPACTIONS = Counter(
    "laptime_read_compactions",
    "Runs not compacted yet of read projects that the warmer compacted before a refresh.",
)

# A read project's backlog compacted by the warmer from this many results on: below it the
# per-test reads' extra work is lost in their noise (bench/bench_backlog_reads.py).
READ_BACKLOG_RESULTS = 8_192


class ReadWarmer:
    """A thread that refreshes kept answers of the database of `engine` after commits."""

    def __init__(
        self,
        engine: Engine,
        *,
        dsn: str,
        shared: SharedFrames | None = None,
        hot: HotReads | None = None,
        settle_s: float = 0.2,
        retry_first_s: float = 1.0,
        retry_cap_s: float = 30.0,
        application_name: str = "laptime read warmer",
        compact_results: int = READ_BACKLOG_RESULTS,
    ) -> None:
        self._engine = engine
        self._dsn = dsn
        self._shared = shared
        self._hot = hot or hot_reads(engine)
        self._compact_results = compact_results
        self._settle_s = settle_s
        self._retry_first_s = retry_first_s
        self._retry_cap_s = retry_cap_s
        self._application_name = application_name
        self._stop = threading.Event()
        self._listening = threading.Event()
        self._warmed: dict[int, tuple[int, ...]] = {}
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="laptime-read-warmer", daemon=True)

    def start(self) -> None:
        """Start listening and refreshing."""
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop after the refresh under way, if any."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout_s)

    @property
    def alive(self) -> bool:
        """True while the thread runs."""
        return self._thread.is_alive()

    def wait_listening(self, timeout_s: float) -> bool:
        """True once the warmer hears commits (within `timeout_s`)."""
        return self._listening.wait(timeout_s)

    def wait_warmed(self, project_id: int, version: tuple[int, ...], timeout_s: float) -> bool:
        """True once the project's answers were refreshed under data `version`."""
        with self._changed:
            return self._changed.wait_for(
                lambda: self._warmed.get(project_id) == version, timeout_s
            )

    def _run(self) -> None:
        delay = self._retry_first_s
        while not self._stop.is_set():
            try:
                with DataNotices(self._dsn, application_name=self._application_name) as notices:
                    self._listening.set()
                    delay = self._retry_first_s
                    self._serve(notices)
            except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
                log.warning("read warmer cannot listen (%s); retrying in %.0f s", exc, delay)
            except Exception:
                log.exception("read warmer failed; retrying in %.0f s", delay)
            self._listening.clear()
            self._stop.wait(delay)
            delay = min(delay * 2, self._retry_cap_s)

    def _serve(self, notices: DataNotices) -> None:
        # Commits made while nobody listened were not heard: refresh every hot project once.
        dirty: set[int | None] = {None}
        rest_until = 0.0
        while not self._stop.is_set():
            if dirty and time.monotonic() >= rest_until:
                started = time.monotonic()
                projects = self._hot.projects() if None in dirty else dirty
                for project_id in sorted(p for p in projects if p is not None):
                    if self._stop.is_set():
                        return
                    self._refresh(project_id)
                dirty = set()
                rest_until = time.monotonic() + (time.monotonic() - started)
            wait_s = 0.5 if not dirty else max(0.0, min(0.5, rest_until - time.monotonic()))
            dirty |= notices.wait(wait_s, self._settle_s)

    def _refresh(self, project_id: int) -> None:
        reads = self._hot.recent(project_id)
        if not reads:
            return
        started = time.perf_counter()
        self._compact(project_id)
        with self._engine.connect() as conn:
            cache = FrameCache.for_project(conn, project_id, self._shared or shared_frames(conn))
            for read in reads:
                try:
                    project_rollup(
                        conn,
                        project_id,
                        read.filters,
                        by=read.by,
                        within=read.within,
                        sort=read.sort,
                        descending=read.descending,
                        limit=read.limit,
                        cache=cache,
                        noted=False,
                    )
                    REFRESHES.labels("refreshed").inc()
                except AnswerError as exc:
                    # Answerable when noted; the data changed under it (e.g. a label gone).
                    log.warning("refreshing %r of project %s: %s", read.by, project_id, exc)
                    REFRESHES.labels("failed").inc()
                except Exception:
                    # One read that cannot be answered must not keep the others stale.
                    log.exception("refreshing %r of project %s failed", read.by, project_id)
                    REFRESHES.labels("failed").inc()
                    conn.rollback()
            version = cache.version
        REFRESH_SECONDS.observe(time.perf_counter() - started)
        with self._changed:
            if version is not None:
                self._warmed[project_id] = version
            self._changed.notify_all()

    def _compact(self, project_id: int) -> None:
        """Compact the project's backlog when it has reached the bound (a pool connection,
        its own transactions)."""
        raw = self._engine.raw_connection()
        try:
            conn = raw.driver_connection
            assert isinstance(conn, psycopg.Connection)
            with conn.transaction():
                backlog = backlog_results(conn, project_id)
            if backlog >= self._compact_results:
                READ_COMPACTIONS.inc(compact_backlog(conn, projects=[project_id]).runs)
        except psycopg.Error as exc:
            # The worker compacts it anyway; the refresh reads through the backlog meanwhile.
            log.warning("compacting project %s before its refresh: %s", project_id, exc)
        finally:
            raw.close()


def start_read_warmer(engine: Engine, settings: Settings) -> ReadWarmer | None:
    """A started warmer for this web process (None when LAPTIME_WARM_READS is off)."""
    if not settings.warm_reads:
        return None
    dsn = engine.url.set(drivername="postgresql").render_as_string(hide_password=False)
    warmer = ReadWarmer(engine, dsn=dsn)
    warmer.start()
    return warmer
