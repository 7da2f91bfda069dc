"""PROMETHEUS_MULTIPROC_DIR: the directory where every process of a deployment keeps its counts.

prometheus_client decides at import time whether metric values live in process memory or in
files under this directory, so the variable must be set before anything imports it: the
entry points set it first (`app.cli.metrics_dir`). This module itself never imports it.

With the variable set, each process (web processes, `laptime serve`'s worker child) writes its
own files there and /metrics sums them: the answer is the same whichever process serves it.
The directory must be empty when the first process starts (stale files would add old counts)
and shared only by processes of one host whose pids cannot collide (not across containers).
"""

from __future__ import annotations

import os
from pathlib import Path

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


def multiprocess_dir() -> Path | None:
    """The shared directory, or None when this process counts on its own."""
    value = os.environ.get(MULTIPROC_ENV)
    return Path(value) if value else None


def drop_empty_setting() -> None:
    """Unset an empty PROMETHEUS_MULTIPROC_DIR: prometheus_client would take it as set and
    write its files into the working directory."""
    if os.environ.get(MULTIPROC_ENV) == "":
        del os.environ[MULTIPROC_ENV]


def forget_process(pid: int) -> None:
    """Drop the live gauges of a process that exited (its counters stay: they happened)."""
    if multiprocess_dir() is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid)  # type: ignore[no-untyped-call]
