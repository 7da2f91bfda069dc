"""`pytest --laptime-shard=I/N`: deselect every collected test outside shard I and record what
this shard ran beside the durations cache; only a full run (1/1) writes the cache itself, so
no shard changes what its siblings plan from."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from laptime_ci.shard_record import ShardRecord, record_path, write_record
from laptime_ci.shards import (
    DEFAULT_CACHE,
    ServerConfig,
    ShardPlan,
    parse_shard_spec,
    plan_shard,
    save_durations,
    shard_fallback,
)

WORKEROUTPUT_NOTES = "laptime_shard_notes"
WORKEROUTPUT_LABELS = "laptime_shard_labels"
WORKEROUTPUT_PLAN = "laptime_shard_plan_id"
WORKEROUTPUT_RECORD = "laptime_shard_record"


class ShardSelector:
    """Selects this shard's tests at collection and records their seconds for the cache."""

    def __init__(self, config: pytest.Config, spec: str) -> None:
        try:
            self.index, self.total = parse_shard_spec(spec)
        except ValueError as exc:
            raise pytest.UsageError(f"--laptime-shard: {exc}") from exc
        cache = (
            config.getoption("laptime_shard_cache")
            or os.environ.get("LAPTIME_SHARD_CACHE")
            or DEFAULT_CACHE
        )
        self.cache_path = Path(cache)
        if not self.cache_path.is_absolute():
            self.cache_path = Path(str(config.rootpath)) / self.cache_path
        self.labels: dict[str, str] = {"shard": f"{self.index}/{self.total}"}
        # The server's id of the plan this shard ran (None for the offline fallbacks): the
        # upload names it so the service can compare the plan with what the jobs took.
        self.plan_id: str | None = None
        self.notes: list[str] = []
        self.seconds: dict[str, float] = {}
        self.finished: set[str] = set()
        # This shard's plan and collection (from a worker under xdist): its record.
        self.record: ShardRecord | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Keep this shard's items, in collection order; report the rest as deselected."""
        server = ServerConfig.from_env(os.environ)
        collected = [item.nodeid for item in items]
        plan = plan_shard(
            collected,
            index=self.index,
            total=self.total,
            server=server,
            cache_path=self.cache_path,
            fallback=shard_fallback(os.environ),
        )
        self.record = _record(plan, collected, server.pipeline)
        self.labels = dict(plan.labels)
        self.plan_id = plan.plan_id
        if plan.warning:
            self.notes.append(f"warning: {plan.warning}")
        mine = set(plan.nodeids)
        kept = [item for item in items if item.nodeid in mine]
        dropped = [item for item in items if item.nodeid not in mine]
        self.notes.append(
            f"shard {self.index}/{self.total}: {len(kept)} of {len(items)} tests ({plan.source})"
        )
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Add up every phase and attempt of each test: what the next split balances."""
        self.seconds[report.nodeid] = self.seconds.get(report.nodeid, 0.0) + report.duration
        if report.when == "teardown":
            self.finished.add(report.nodeid)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Merge this run's seconds into the cache; an xdist worker instead hands its plan's
        notes and labels to the controller, which alone writes and prints."""
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKEROUTPUT_NOTES] = list(self.notes)
            workeroutput[WORKEROUTPUT_LABELS] = dict(self.labels)
            workeroutput[WORKEROUTPUT_PLAN] = self.plan_id
            workeroutput[WORKEROUTPUT_RECORD] = self.record.to_dict() if self.record else None
            return
        target = self.cache_path
        try:
            if self.total == 1:
                # A full run: nobody plans from the cache while it runs.
                if self.seconds:
                    save_durations(self.cache_path, self.seconds)
            elif self.record is not None:
                target = record_path(self.cache_path, self.index, self.total)
                unfinished = tuple(n for n in self.record.selected if n not in self.finished)
                record = replace(self.record, seconds=dict(self.seconds), unfinished=unfinished)
                write_record(target, record)
                self.notes.append(f"record of this shard: {target} (laptime-ci shard-verify)")
        except OSError as exc:
            self.notes.append(f"warning: cannot write {target}: {exc}")

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Take a finished worker's plan notes (every worker planned the same) and labels."""
        output = getattr(node, "workeroutput", None) or {}
        for line in output.get(WORKEROUTPUT_NOTES) or []:
            if line not in self.notes:
                self.notes.append(str(line))
        labels = output.get(WORKEROUTPUT_LABELS)
        if isinstance(labels, dict):
            self.labels.update({str(k): str(v) for k, v in labels.items()})
        if output.get(WORKEROUTPUT_PLAN):
            self.plan_id = str(output[WORKEROUTPUT_PLAN])
        record = output.get(WORKEROUTPUT_RECORD)
        if isinstance(record, dict) and self.record is None:
            self.record = ShardRecord.from_dict(record)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """Say which shard ran and which fallback planned it; a shard that runs everything
        says so in red."""
        for line in self.notes:
            loud = self.record is not None and self.record.source == "all" and self.total > 1
            terminalreporter.write_line(
                f"laptime: {line}",
                red=loud and line.startswith("warning"),
                yellow=not loud and line.startswith("warning"),
            )


def _record(plan: ShardPlan, collected: list[str], pipeline: str | None) -> ShardRecord:
    return ShardRecord(
        index=plan.index,
        total=plan.total,
        source=plan.source,
        plan=plan.plan_key,
        collected=tuple(collected),
        selected=plan.nodeids,
        plan_id=plan.plan_id,
        pipeline=pipeline,
        warning=plan.warning,
    )
