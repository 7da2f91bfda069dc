"""Queue mode: a pipeline's collected tests as work items that CI nodes pull in batches.

- `work_items`: the items, heaviest first, heavy files cut finer where that shortens the tail.
- `batches`: how much the next claim takes (shrinking as the queue empties), what a node starts
  at once, what an idle node takes over from a slow one, what fits a node's budget, when a
  first claim is a probe and which items a slow node leaves to faster ones.
- `report`: what ran where, twice or nowhere, and each node's idle tail.
"""

from analysis.queue.batches import (
    PROBE_S,
    BatchPick,
    Candidate,
    batch_target_s,
    fits_budget,
    needs_probe,
    pace_limit_s,
    pick_batch,
    segment_goal_s,
    segment_size,
    steal_share,
    wait_retry_s,
)
from analysis.queue.report import NodeRun, QueueReport, RanTwice, queue_report
from analysis.queue.work_items import WorkItem, queue_work_items

__all__ = [
    "PROBE_S",
    "BatchPick",
    "Candidate",
    "NodeRun",
    "QueueReport",
    "RanTwice",
    "WorkItem",
    "batch_target_s",
    "fits_budget",
    "needs_probe",
    "pace_limit_s",
    "pick_batch",
    "queue_report",
    "queue_work_items",
    "segment_goal_s",
    "segment_size",
    "steal_share",
    "wait_retry_s",
]
