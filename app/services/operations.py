"""What the probes and /metrics read: the deployment's readiness and the queue's gauges."""

from app.db.queue_metrics import QueueCollector
from app.db.readiness import check_readiness

__all__ = ["QueueCollector", "check_readiness"]
