"""The Prometheus text for /metrics and for a worker's own metrics port.

Counters and histograms come from every process sharing PROMETHEUS_MULTIPROC_DIR (or from this
process alone without it); the collectors passed in (the database's gauges) are read at the
moment of the scrape, so they are right whichever process answers.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    disable_created_metrics,
    generate_latest,
    start_http_server,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from app.metrics.process_dir import multiprocess_dir

__all__ = ["CONTENT_TYPE_LATEST", "process_registry", "render", "serve_metrics"]

# No `*_created` series: the multi-process collector has none, so the exposition is the same
# with one process or several (and a third smaller).
disable_created_metrics()  # type: ignore[no-untyped-call]


def process_registry() -> CollectorRegistry:
    """The counts of every process of this deployment (or of this process alone)."""
    directory = multiprocess_dir()
    if directory is None:
        return REGISTRY
    registry = CollectorRegistry(auto_describe=False)
    MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]
    return registry


class _Forward(Collector):
    """Yields another registry's metrics, so one exposition holds both."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry

    def collect(self) -> Iterable[Metric]:
        return self.registry.collect()


def render(extra: Iterable[Collector] = ()) -> bytes:
    """The exposition text: the processes' counts, then the `extra` collectors' readings."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Forward(process_registry()))
    for collector in extra:
        registry.register(collector)
    return generate_latest(registry)


def serve_metrics(port: int, host: str = "0.0.0.0") -> tuple[object, threading.Thread]:
    """Serve this process's (or the shared directory's) metrics on `port` from a daemon thread,
    for a worker with no web process beside it; returns the server and its thread."""
    server, thread = start_http_server(port, addr=host, registry=process_registry())
    return server, thread
