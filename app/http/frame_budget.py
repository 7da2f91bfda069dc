"""Each web process's share of the deployment's frame budget, applied and shown in /metrics.

`LAPTIME_FRAME_CACHE_MIB` is for the deployment: `laptime serve --workers N` gives each of its
N processes 1/N (LAPTIME_WEB_PROCESSES), so adding processes does not multiply the memory.
"""

from __future__ import annotations

from prometheus_client import Gauge
from sqlalchemy import Engine

from app.services.project_reads import budget_frames
from app.settings import Settings

# One series per live process ("liveall": a `pid` label), so an operator sees every share.
FRAME_BUDGET = Gauge(
    "laptime_frame_cache_budget_bytes",
    "Bytes of frames this web process may keep between requests.",
    multiprocess_mode="liveall",
)


def apply_frame_budget(engine: Engine, settings: Settings) -> None:
    """Bound the frames kept for `engine`'s database to this process's share."""
    budget_frames(engine, settings.frame_cache_bytes)
    FRAME_BUDGET.set(settings.frame_cache_bytes)
