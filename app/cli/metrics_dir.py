"""The directory prometheus_client's multi-process mode shares between laptime's processes.

Counters of several processes (web processes, ingest workers) only add up when every one of
them writes its samples under the same `PROMETHEUS_MULTIPROC_DIR`, set before it imports
prometheus_client. Files left by an earlier run would be added in too, so the directory is
emptied when `laptime serve` starts (prometheus_client's documented requirement).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from app.metrics.process_dir import MULTIPROC_ENV, multiprocess_dir


def wipe_samples(directory: Path) -> None:
    """Create `directory` if needed and delete the sample files (*.db) of earlier processes."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink(missing_ok=True)


@contextlib.contextmanager
def shared_metrics_dir(*, needed: bool) -> Iterator[Path | None]:
    """Yield the multi-process metrics directory, exported in the environment children inherit.

    A directory the operator set is emptied and kept; otherwise, when `needed` (more than one
    process will serve or ingest), a fresh temporary one is made and removed at the end.
    """
    given = multiprocess_dir()
    if given is not None:
        wipe_samples(given)
        yield given
        return
    if not needed:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="laptime-metrics-") as made:
        os.environ[MULTIPROC_ENV] = made
        try:
            yield Path(made)
        finally:
            os.environ.pop(MULTIPROC_ENV, None)
