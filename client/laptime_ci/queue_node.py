"""One CI node's side of queue mode, whatever the runner: open or join the pipeline's queue,
hand out batches that fit the budget, report what ran; and the fallbacks that never leave a
test unrun.

- Server unreachable at the start: the consistent static shard (the durations cache, else the
  nodeid hash: what every node computes alike from the same collection), as `--laptime-shard`.
- Server lost mid-run: every collected test this node has not run itself, in one last batch
  (it cannot know what its siblings ran, so some may run twice; none is left unrun).
- Budget: a batch is claimed only for what is predicted to fit the time left with the
  prediction's error as margin; when nothing fits, the node hands its claims back and stops.
- Segments (`segmented`, the pytest plugin): a batch is begun segment by segment, and what is
  not begun an idle sibling may take over, so a slow node never holds the tail. The smallest
  batch and segment follow this node's measured cost per call (`queue_floors`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from laptime_ci.budget import JobClock
from laptime_ci.queue_client import (
    LeaseKeeper,
    QueueClient,
    QueueConfig,
    QueueRefused,
    QueueUnavailable,
)
from laptime_ci.shards import ServerConfig, plan_shard

# What a node that sees nothing to take waits at most in one go before asking again.
MAX_WAIT_S = 5.0
# The share of a node's time its queue calls may take: it sizes the smallest batch (a claim
# and a finish) and segment (one start), up to MAX_FLOOR_S (a slow server must not make the
# last batches long).
QUEUE_SHARE = 0.05
MAX_FLOOR_S = 10.0
# A test predicted to run longer than this does not claim the next batch before it starts:
# what a claim begins no sibling can take over, so a long test would hold it idle while a
# sibling runs out of work (measured: an 11.6 s test held a 1,488-test file for 23 s on a
# half-speed node while its sibling idled 20 s). The price: that test's teardown does not
# know what follows, so fixtures it shares with the next batch are set up again.
LOOK_AHEAD_MAX_S = 2.0


def looks_ahead(predicted_s: float | None) -> bool:
    """Whether the last test begun may claim the next batch before it runs (None: no
    prediction, taken as short)."""
    return predicted_s is None or predicted_s <= LOOK_AHEAD_MAX_S


def queue_floors(round_trip_s: float | None) -> tuple[float, float]:
    """(batch, segment) floors in seconds for calls that take `round_trip_s` (None: not
    measured yet): the calls at most QUEUE_SHARE of the work they carry."""
    if round_trip_s is None:
        return 0.0, 0.0
    call = max(round_trip_s, 0.0) / QUEUE_SHARE
    return min(2.0 * call, MAX_FLOOR_S), min(call, MAX_FLOOR_S)


@dataclass
class Batch:
    """Tests to run now; `claim_id` None outside the queue (fallbacks)."""

    nodeids: list[str]
    claim_id: int | None
    predicted_s: dict[str, float] = field(default_factory=dict)  # per test, where known
    selection: dict[str, Any] | None = None
    position: dict[str, int] = field(default_factory=dict)  # nodeid -> its item's position
    begun: set[int] | None = None  # positions this node may run (None: every test)

    def begun_nodeids(self) -> list[str]:
        """The batch's tests this node has begun, in order."""
        if self.begun is None:
            return list(self.nodeids)
        return [n for n in self.nodeids if self.position.get(n) in self.begun]

    def unbegun_positions(self) -> list[int]:
        """Positions of the batch not begun yet, in order."""
        if self.begun is None:
            return []
        return list(dict.fromkeys(p for p in self.position.values() if p not in self.begun))


@dataclass
class NodeSummary:
    """What the node did, for its closing lines and exit status."""

    mode: str = "queue"  # queue | static (server down at start) | lost (server lost mid-run)
    notes: list[str] = field(default_factory=list)
    ran: list[str] = field(default_factory=list)
    batches: int = 0
    # (name, predicted seconds) left because they did not fit the budget
    not_fit: list[tuple[str, float]] = field(default_factory=list)
    never_ran: list[str] = field(default_factory=list)  # ran on no node (from the server)
    failed: bool = False  # queue mode says the pipeline must fail
    plan_id: str | None = None  # the queue as a plan of its nodes (from the server)


class QueueNode:
    """The queue loop of one node (see the module docstring)."""

    def __init__(
        self,
        collected: Sequence[str],
        *,
        config: QueueConfig,
        clock: JobClock,
        runner: str = "pytest",
        cache_path: Path | None = None,
        min_batch_s: float = 0.0,
        env: Mapping[str, str] | None = None,
        segmented: bool = False,
    ) -> None:
        self.collected = list(dict.fromkeys(collected))
        self.config = config
        self.clock = clock
        self.runner = runner
        self.cache_path = cache_path
        self.min_batch_s = min_batch_s  # the runner's own floor (its process start)
        self.segmented = segmented
        self.round_trip_s: float | None = None  # the calls' measured cost (moving average)
        self.env = os.environ if env is None else env
        self.client = QueueClient(config)
        self.summary = NodeSummary()
        self.predicted: dict[str, float] = {}
        self.handed: set[str] = set()  # every test given to this node to run
        self.error = 0.25  # the predictions' relative error, from the queue
        self._done_static = False
        self._static_ids: list[str] = []
        self._keeper: LeaseKeeper | None = None
        self._allow_unrun = (self.env.get("LAPTIME_QUEUE_ALLOW_UNRUN") or "") in ("1", "true")

    def start(self) -> None:
        """Open or join the queue; with no server, plan the static shard instead."""
        if not self.config.configured:
            self._static("no queue server configured (LAPTIME_URL, LAPTIME_TOKEN, "
                         "LAPTIME_PROJECT, and a pipeline id)")  # fmt: skip
            return
        try:
            opened = self.client.open(self.collected, self.runner, self.clock.budget_s)
        except QueueUnavailable as exc:
            self._static(f"queue server unreachable at start ({exc})")
            return
        except QueueRefused as exc:
            if exc.status == 409:
                # Nodes disagreeing on the collected set: an error, never a silent mix.
                self.summary.failed = True
                self.summary.mode = "refused"
                self.summary.notes.append(f"error: {exc.detail}")
                return
            self._static(f"queue server refused ({exc})")
            return
        self.error = float(opened.get("error") or 0.0)
        self.summary.plan_id = str(opened.get("plan_id") or "") or None
        verb = "opened" if opened.get("opened") else "joined"
        estimated = opened.get("estimated") or []
        self.summary.notes.append(
            f"queue {opened['queue_id']} {verb} (node {self.config.node}, attempt "
            f"{self.config.attempt}): {opened['tests']} tests"
            + (f", {len(estimated)} without history placed by estimate" if estimated else "")
            + (f", replaying {opened['replay_items']} items" if opened.get("replay_items") else "")
        )
        self._keeper = LeaseKeeper(self.client).__enter__()

    def _static(self, reason: str) -> None:
        self.summary.mode = "static"
        plan = plan_shard(
            self.collected,
            index=int(self.config.node) if self.config.node.isdigit() else 1,
            total=self.config.total,
            server=ServerConfig(),
            cache_path=self.cache_path,
        )
        self._static_ids = list(plan.nodeids)
        self.summary.notes.append(
            f"warning: {reason}: running static shard {self.config.node}/{self.config.total} "
            f"({plan.source}, {len(plan.nodeids)} tests)"
        )

    def next_batch(self, reserved_s: float = 0.0, *, wait: bool = True) -> Batch | None:
        """The next tests to run (None: this node is done). `reserved_s` is work already
        committed to but not yet run (the current batch's last test). A prefetch (`wait`
        False, while this node still holds a batch) returns None instead of waiting for
        siblings: two nodes each waiting on the other's lease would never finish."""
        mode = self.summary.mode
        if mode == "refused":
            return None
        if mode in ("static", "lost"):
            if self._done_static:
                return None
            self._done_static = True
            ids = self._static_ids if mode == "static" else self._unrun_here()
            self.handed.update(ids)
            return self._budgeted(Batch(ids, None, {n: self.predicted[n] for n in ids
                                                    if n in self.predicted}))  # fmt: skip
        while True:
            remaining = self.clock.remaining_s(reserved_s)
            batch_floor, segment_floor = queue_floors(self.round_trip_s)
            try:
                asked = time.monotonic()
                answer = self.client.claim(
                    remaining,
                    max(self.min_batch_s, batch_floor),
                    segmented=self.segmented,
                    min_segment_s=segment_floor,
                    pace=self.clock.pace.ratio(),
                )
                self._measured(time.monotonic() - asked)
            except (QueueUnavailable, QueueRefused) as exc:
                return self._lost(str(exc))
            state = answer.get("state")
            if state == "batch":
                return self._batch(answer)
            if state == "budget":
                self.summary.not_fit = [
                    (str(i["name"]), float(i["predicted_s"])) for i in answer.get("not_fit", [])
                ]
                self._release("budget")
                return None
            if state == "wait":
                if not wait:
                    return None
                wait_s = min(float(answer.get("retry_after_s") or 1.0), MAX_WAIT_S)
                left = self.clock.remaining_s(reserved_s)
                if left is not None and left <= wait_s:
                    return None
                time.sleep(wait_s)  # the server's own back-off while siblings hold leases
                continue
            return None

    def _measured(self, seconds: float) -> None:
        self.round_trip_s = (
            seconds if self.round_trip_s is None else 0.7 * self.round_trip_s + 0.3 * seconds
        )

    def _batch(self, answer: Mapping[str, Any]) -> Batch:
        """A claimed batch; segmented, only its first segment is this node's to run yet."""
        self.summary.batches += 1
        nodeids: list[str] = []
        position: dict[str, int] = {}
        for item in answer["items"]:
            share = float(item["predicted_s"]) / max(len(item["nodeids"]), 1)
            for nodeid in item["nodeids"]:
                self.predicted[nodeid] = share
                position[nodeid] = int(item["position"])
                nodeids.append(nodeid)
        begun = {int(p) for p in answer.get("started") or []} if self.segmented else None
        batch = Batch(
            nodeids,
            int(answer["claim_id"]),
            {n: self.predicted[n] for n in nodeids},
            answer.get("selection"),
            position,
            begun,
        )
        self.handed.update(batch.begun_nodeids())
        return batch

    def begin_next(self, batch: Batch) -> list[str]:
        """Begin the batch's next segment: its tests, in order ([] when nothing is left, or
        an idle sibling took the rest over). With the server lost, the whole rest (a sibling
        may have taken part of it: run twice, never unrun)."""
        rest = batch.unbegun_positions()
        if batch.begun is None or batch.claim_id is None or not rest:
            return []
        if self.summary.mode == "queue":
            try:
                asked = time.monotonic()
                granted = self.client.start(
                    batch.claim_id, segment=True, min_segment_s=queue_floors(self.round_trip_s)[1]
                )
                self._measured(time.monotonic() - asked)
            except (QueueUnavailable, QueueRefused) as exc:
                self._mark_lost(str(exc))
                granted = rest
        else:
            granted = rest
        new = set(granted) - batch.begun
        batch.begun |= new
        ids = [n for n in batch.nodeids if batch.position.get(n) in new]
        self.handed.update(ids)
        return ids

    def _budgeted(self, batch: Batch) -> Batch:
        """Drop the fallback batch's tests predicted not to fit (known predictions only)."""
        left = self.clock.remaining_s()
        if left is None:
            return batch
        kept, total = [], 0.0
        for nodeid in batch.nodeids:
            seconds = batch.predicted_s.get(nodeid, 0.0)
            if total + seconds > left:
                self.summary.not_fit.append((nodeid, seconds))
                continue
            kept.append(nodeid)
            total += seconds
        batch.nodeids = kept
        return batch

    def _unrun_here(self) -> list[str]:
        return [n for n in self.collected if n not in self.handed]

    def _lost(self, reason: str) -> Batch | None:
        """The server is gone mid-run: everything this node has not run, in one batch."""
        self._mark_lost(reason)
        return self.next_batch()

    def _mark_lost(self, reason: str) -> None:
        self.summary.mode = "lost"
        self._done_static = False
        self.summary.notes.append(
            f"warning: queue server lost mid-run ({reason}): running every collected test "
            "this node has not run (some may run twice, none is left unrun)"
        )

    def finished(self, batch: Batch, results: Sequence[tuple[str, float, str]]) -> None:
        """Record what the batch ran (on the server when it came from the queue)."""
        self.summary.ran.extend(n for n, _, _ in results)
        if batch.claim_id is None or self.summary.mode != "queue":
            return
        try:
            self.client.finish(batch.claim_id, results)
        except (QueueUnavailable, QueueRefused) as exc:
            self.summary.notes.append(f"warning: could not record batch {batch.claim_id}: {exc}")
            self.summary.mode = "lost"
            self._done_static = False

    def _release(self, reason: str) -> None:
        try:
            left = self.client.release(reason)
        except (QueueUnavailable, QueueRefused):
            return
        pending = left.get("pending") or []
        if pending:
            self.summary.notes.append(
                f"budget stop: {len(pending)} items left in the queue when this node stopped "
                f"({self.clock.elapsed_s():.0f} s of {self.clock.budget_s:.0f} s used)"
            )

    def close(self) -> NodeSummary:
        """Stop beating; ask the server what ran nowhere (exact once no node holds a claim)."""
        if self._keeper is not None:
            self._keeper.__exit__(None, None, None)
            self._keeper = None
        summary = self.summary
        if summary.mode == "queue":
            try:
                report = self.client.status()
            except (QueueUnavailable, QueueRefused):
                report = {}
            if report and not report.get("open_claims"):
                summary.never_ran = list(report.get("never_ran") or [])
        if summary.not_fit:
            summary.notes.append(
                "error: not run, predicted not to fit the budget: "
                + ", ".join(f"{name} ({seconds:.1f} s)" for name, seconds in summary.not_fit)
            )
        if summary.never_ran:
            summary.notes.append(
                f"error: {len(summary.never_ran)} tests ran on no node: "
                + ", ".join(summary.never_ran)
            )
        if (summary.not_fit or summary.never_ran) and not self._allow_unrun:
            summary.failed = True
        return summary
