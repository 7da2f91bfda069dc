"""The webhook sender of a `laptime worker` process: a thread beside the ingest loop, with a
small engine of its own, so a slow receiver never delays an upload (nor the reverse)."""

from __future__ import annotations

import threading

from sqlalchemy import Engine

from app.db.engine import make_engine
from app.services.change_notices import enqueue_new_changes
from app.services.digest import enqueue_weekly_digests
from app.services.webhooks import run_deliveries
from app.settings import Settings


def start_deliveries(url: str, settings: Settings, stop: threading.Event) -> threading.Thread:
    """Start the sender; it ends when `stop` is set."""

    def deliver() -> None:
        engine = make_engine(url, pool_size=1)
        try:
            run_deliveries(
                engine,
                settings.webhook_policy,
                stop,
                poll_s=settings.webhook_poll_s,
                each_pass=_queue_events,
            )
        finally:
            engine.dispose()

    thread = threading.Thread(target=deliver, name="laptime-webhooks", daemon=True)
    thread.start()
    return thread


def _queue_events(engine: Engine) -> None:
    """What each pass queues besides retries: the changes ingest stored, the weekly digest."""
    enqueue_new_changes(engine)
    enqueue_weekly_digests(engine)
