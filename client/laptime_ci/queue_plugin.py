"""`pytest --laptime-queue=I/N`: the session runs what node I claims from its pipeline's queue,
batch after batch, never starting a test predicted not to fit `--laptime-budget`.

A batch is begun segment by segment (what this node has not begun, an idle sibling may take
over). The next segment, or else the next batch, is asked for just before the last test begun
runs, so that test's teardown knows what comes next (module fixtures shared with it stay up).
Inside one node, pytest-xdist cannot pull from the queue (its controller schedules the tests
itself): run `laptime-ci queue run -- pytest -n auto {selection}` there instead, one process per
batch.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from laptime_ci.budget import JobClock
from laptime_ci.queue_client import QueueConfig
from laptime_ci.queue_node import Batch, NodeSummary, QueueNode, looks_ahead
from laptime_ci.shards import DEFAULT_CACHE, parse_shard_spec


class QueueRunner:
    """Replaces pytest's run loop with the queue's batches."""

    def __init__(self, config: pytest.Config, spec: str) -> None:
        try:
            self.index, self.total = parse_shard_spec(spec)
        except ValueError as exc:
            raise pytest.UsageError(f"--laptime-queue: {exc}") from exc
        if (getattr(config.option, "numprocesses", None) or 0) and getattr(
            config.option, "dist", "no"
        ) != "no":
            raise pytest.UsageError(
                "--laptime-queue runs in one process: xdist's controller schedules its own "
                "workers. Use `laptime-ci queue run -- pytest -n auto {selection}` to keep "
                "xdist inside each batch."
            )
        budget = config.getoption("laptime_budget")
        self.clock = JobClock.from_env(os.environ, None if budget is None else float(budget))
        cache = config.getoption("laptime_shard_cache") or os.environ.get("LAPTIME_SHARD_CACHE")
        path = Path(cache or DEFAULT_CACHE)
        self.cache_path = path if path.is_absolute() else Path(str(config.rootpath)) / path
        self.seconds: dict[str, float] = {}
        self.outcomes: dict[str, str] = {}
        self.summary: NodeSummary | None = None
        # What the report's upload names (read by the report writer, as a shard's are).
        self.labels: dict[str, str] = {"shard": f"{self.index}/{self.total}"}

    @property
    def plan_id(self) -> str | None:
        """The queue's plan, for a node that ran from the queue to the end (a static or lost
        node ran something else than its share)."""
        summary = self.summary
        return summary.plan_id if summary is not None and summary.mode == "queue" else None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Every phase counted; the worst outcome kept."""
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        worse = report.when == "call" or report.outcome != "passed"
        if worse and self.outcomes.get(report.nodeid) in (None, "passed"):
            self.outcomes[report.nodeid] = report.outcome

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        """Claim, run, report, until the queue is done or the budget stops this node."""
        if session.testsfailed and not session.config.option.continue_on_collection_errors:
            raise session.Interrupted(f"{session.testsfailed} errors during collection")
        if session.config.option.collectonly:
            return True
        by_id = {item.nodeid: item for item in session.items}
        config = QueueConfig.from_env(os.environ, index=self.index, total=self.total)
        node = QueueNode(
            list(by_id),
            config=config,
            clock=self.clock,
            cache_path=self.cache_path,
            min_batch_s=config.min_batch_s,
            segmented=True,
        )
        node.start()
        batch = node.next_batch()
        while batch is not None:
            run = [n for n in batch.begun_nodeids() if n in by_id]
            following: Batch | None = None
            i = 0
            while i < len(run):
                if not self._fits(node, batch, run[i]):
                    break
                reserved = batch.predicted_s.get(run[i])
                ahead = looks_ahead(reserved)
                if i + 1 == len(run) and ahead:
                    # The last test begun, a short one: begin the batch's next segment, else
                    # claim the next batch, so this test's teardown knows what comes next
                    # (module fixtures shared with it stay up). A long one begins nothing
                    # while it runs (looks_ahead).
                    run += [n for n in node.begin_next(batch) if n in by_id]
                    if i + 1 == len(run):
                        following = node.next_batch(reserved_s=reserved or 0.0, wait=False)
                if i + 1 < len(run):
                    nextitem: pytest.Item | None = by_id[run[i + 1]]
                else:
                    firsts = following.begun_nodeids() if following else []
                    nextitem = by_id.get(firsts[0]) if firsts else None
                item = by_id[run[i]]
                item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                predicted = batch.predicted_s.get(item.nodeid)
                self.clock.pace.add(predicted, self.seconds.get(item.nodeid))
                if session.shouldfail or session.shouldstop:
                    break
                if i + 1 == len(run) and not ahead:
                    run += [n for n in node.begin_next(batch) if n in by_id]  # after, not during
                i += 1
            ran = [(n, self.seconds.get(n, 0.0), self.outcomes.get(n, "passed"))
                   for n in batch.nodeids if n in self.seconds]  # fmt: skip
            node.finished(batch, ran)
            if session.shouldfail:
                raise session.Failed(session.shouldfail)
            if session.shouldstop:
                raise session.Interrupted(session.shouldstop)
            # Nothing prefetched (done, a budget stop, or siblings' leases): ask again.
            batch = following if following is not None else node.next_batch()
        self.summary = node.close()
        return True

    def _fits(self, node: QueueNode, batch: Batch, nodeid: str) -> bool:
        """Never start a test predicted not to finish within the budget."""
        left = self.clock.remaining_s()
        predicted = batch.predicted_s.get(nodeid)
        if left is None or predicted is None:
            return True
        if predicted * (1.0 + node.error) <= left:
            return True
        pace = self.clock.pace.factor()
        node.summary.notes.append(
            f"budget: {nodeid} ({predicted:.1f} s predicted, x{pace:.1f} at this node's pace) "
            f"not started with {left * pace:.1f} s left before the "
            f"{self.clock.reserve_s:.0f} s kept for the close"
        )
        return False

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """A pipeline that left tests unrun fails, whatever this node's own tests did."""
        if self.summary is not None and self.summary.failed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The queue's notes: mode, batches, budget stop, tests that ran nowhere."""
        summary = self.summary
        if summary is None:
            return
        terminalreporter.write_line(
            f"laptime: queue node {self.index}/{self.total} ({summary.mode}): "
            f"{len(summary.ran)} tests in {summary.batches or 1} batches, "
            f"{self.clock.elapsed_s():.1f} s since the job started"
            + (f" of a {self.clock.budget_s:.0f} s budget" if self.clock.budget_s else "")
        )
        for line in summary.notes:
            terminalreporter.write_line(
                f"laptime: {line}",
                red=line.startswith("error"),
                yellow=line.startswith("warning"),
            )
