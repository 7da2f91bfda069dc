"""Gauges read from the database at scrape time: the queue, the workers' heartbeats.

Read at the moment of the scrape rather than kept by a process, so every web process answers
the same whatever ran the ingests. A database that does not answer (within the same 2 s the
readiness probe allows) yields `laptime_database_up 0` and no queue gauges; the processes'
own counters are still served.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass

from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import SQLAlchemyError

log = logging.getLogger(__name__)

# Per-worker series: at most this many workers (the most recently seen), so a fleet that
# restarts often cannot grow the exposition without bound (old rows are pruned after a day).
MAX_WORKER_SERIES = 100


@dataclass(frozen=True)
class WorkerBeat:
    """One worker's last heartbeat."""

    name: str
    state: str
    age_s: float


@dataclass(frozen=True)
class QueueStats:
    """The queue and its workers as the database sees them now."""

    queued: int
    oldest_queued_age_s: float  # 0 when the queue is empty
    ingesting: int
    workers: list[WorkerBeat]


def read_queue_stats(conn: Connection) -> QueueStats:
    """Count the queue (uploads not done or failed, claimed ones included) and the workers."""
    # The partial index upload_queued covers the count; the oldest is the lowest id.
    queued, oldest = conn.execute(
        text(
            "SELECT count(*), extract(epoch FROM clock_timestamp() - min(created_at)) "
            "FROM upload WHERE status = 'queued'"
        )
    ).one()
    beats = conn.execute(
        text(
            "SELECT name, state, upload_id IS NOT NULL, "
            "extract(epoch FROM clock_timestamp() - seen_at) FROM worker_heartbeat "
            "ORDER BY seen_at DESC LIMIT :n"
        ),
        {"n": MAX_WORKER_SERIES},
    ).all()
    return QueueStats(
        queued=int(queued),
        oldest_queued_age_s=max(0.0, float(oldest or 0.0)),
        ingesting=sum(1 for _, state, busy, _ in beats if busy and state == "ingesting"),
        workers=[WorkerBeat(str(n), str(s), max(0.0, float(a))) for n, s, _, a in beats],
    )


class QueueCollector(Collector):
    """A prometheus_client collector reading QueueStats at each scrape."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "laptime_database_up", "1 when the database answered this scrape's queries, else 0."
        )
        try:
            with self.engine.connect() as conn:
                # An overloaded server must not hang the scrape.
                conn.execute(text("SET statement_timeout = 2000"))
                stats = read_queue_stats(conn)
                conn.rollback()
        except SQLAlchemyError as exc:
            log.warning("metrics: database unavailable: %s", type(exc).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from _queue_families(stats)


def _queue_families(stats: QueueStats) -> Iterator[Metric]:
    yield GaugeMetricFamily(
        "laptime_queue_depth",
        "Uploads waiting for or in ingestion (status queued, claimed ones included).",
        value=stats.queued,
    )
    yield GaugeMetricFamily(
        "laptime_queue_oldest_age_seconds",
        "Age of the oldest upload still queued; 0 when the queue is empty.",
        value=stats.oldest_queued_age_s,
    )
    yield GaugeMetricFamily(
        "laptime_uploads_ingesting", "Uploads a worker is ingesting now.", value=stats.ingesting
    )
    states = GaugeMetricFamily(
        "laptime_workers", "Workers by the state of their last heartbeat.", labels=["state"]
    )
    for state in ("starting", "idle", "ingesting", "waiting", "lost"):
        states.add_metric([state], sum(1 for w in stats.workers if w.state == state))
    yield states
    ages = GaugeMetricFamily(
        "laptime_worker_heartbeat_age_seconds",
        "Seconds since each worker's last heartbeat (host:pid; the 100 most recently seen).",
        labels=["worker"],
    )
    for worker in stats.workers:
        ages.add_metric([worker.name], worker.age_s)
    yield ages
    newest = min((w.age_s for w in stats.workers if w.state != "lost"), default=None)
    if newest is not None:
        yield GaugeMetricFamily(
            "laptime_worker_newest_heartbeat_age_seconds",
            "Seconds since the most recent heartbeat of any worker (what /readyz checks).",
            value=newest,
        )
