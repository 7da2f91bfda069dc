"""What each shard ran, kept beside the durations cache (`.laptime/shards/`), never in it.

A shard run writes only its own record: the cache its siblings plan from stays as it was, and
is updated by a full run or by `laptime-ci shard-fold`. `laptime-ci shard-verify` reads the
records of a pipeline's shards and names every collected test that ran in no shard or twice.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORD_VERSION = 1
RECORD_DIR = "shards"


@dataclass(frozen=True)
class ShardRecord:
    """One shard's run: its plan, the tests it collected and selected, and their seconds."""

    index: int
    total: int
    source: str
    plan: str
    collected: tuple[str, ...]
    selected: tuple[str, ...]
    seconds: dict[str, float] = field(default_factory=dict)
    plan_id: str | None = None
    pipeline: str | None = None
    warning: str | None = None
    # Selected tests the run never finished (a CI timeout or -x stopped it first).
    unfinished: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The record's JSON document."""
        return {
            "version": RECORD_VERSION,
            "shard": f"{self.index}/{self.total}",
            "source": self.source,
            "plan": self.plan,
            "plan_id": self.plan_id,
            "pipeline": self.pipeline,
            "warning": self.warning,
            "collected": list(self.collected),
            "selected": list(self.selected),
            "seconds": {k: round(v, 6) for k, v in self.seconds.items()},
            "unfinished": list(self.unfinished),
        }

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> ShardRecord:
        """Raises ValueError for anything that is not a shard record."""
        try:
            index_text, _, total_text = str(doc["shard"]).partition("/")
            seconds = doc.get("seconds") or {}
            return cls(
                index=int(index_text),
                total=int(total_text),
                source=str(doc["source"]),
                plan=str(doc["plan"]),
                collected=tuple(str(n) for n in doc["collected"]),
                selected=tuple(str(n) for n in doc["selected"]),
                seconds={str(k): float(v) for k, v in seconds.items()},
                plan_id=doc.get("plan_id"),
                pipeline=doc.get("pipeline"),
                warning=doc.get("warning"),
                unfinished=tuple(str(n) for n in doc.get("unfinished") or ()),
            )
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a shard record ({exc})") from exc


def record_path(cache_path: Path, index: int, total: int) -> Path:
    """Where shard I/N of this checkout writes its record: beside the cache, not in it."""
    return cache_path.parent / RECORD_DIR / f"shard-{index}-of-{total}.json"


def write_record(path: Path, record: ShardRecord) -> None:
    """Write one record atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=".shard-", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump(record.to_dict(), out, sort_keys=True)
    os.replace(tmp, path)


def record_files(paths: Iterable[Path]) -> list[Path]:
    """The record files named, a directory standing for the *.json files in it."""
    found: list[Path] = []
    for path in paths:
        found += sorted(path.glob("*.json")) if path.is_dir() else [path]
    return found


def load_record(path: Path) -> ShardRecord:
    """Raises ValueError (with the path) when the file is unreadable or not a record."""
    try:
        return ShardRecord.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: {exc}") from exc


@dataclass(frozen=True)
class Verdict:
    """What shard-verify found: problems fail the pipeline, notes explain a fallback."""

    problems: list[str]
    notes: list[str]
    collected: int


def verify_records(records: Sequence[ShardRecord]) -> Verdict:
    """Every collected test selected by one shard: unrun tests, tests two agreeing shards ran,
    missing shards and shards that planned differently are problems. Tests run again by a
    shard that declared it ran everything (no plan) are a note, not a problem."""
    if not records:
        return Verdict(["no shard records"], [], 0)
    problems: list[str] = []
    notes: list[str] = []
    totals = sorted({r.total for r in records})
    if len(totals) > 1:
        problems.append(f"records of different shard counts {totals}: one pipeline's only")
    total = totals[-1]
    indices = Counter(r.index for r in records if r.total == total)
    problems += [f"shard {i}/{total} left no record" for i in range(1, total + 1) if not indices[i]]
    problems += [f"shard {i}/{total} has {n} records" for i, n in sorted(indices.items()) if n > 1]
    collections = {frozenset(r.collected) for r in records}
    if len(collections) > 1:
        sizes = ", ".join(f"{r.index}/{r.total}: {len(set(r.collected))}" for r in records)
        problems.append(f"shards collected different tests ({sizes})")
    collected = sorted(frozenset().union(*collections))
    planned = [r for r in records if r.source != "all"]
    plans = {r.plan for r in planned}
    if len(plans) > 1:
        listed = ", ".join(f"{r.index}/{r.total} {r.plan}" for r in planned)
        problems.append(f"shards used different plans ({listed})")
    everything = [r for r in records if r.source == "all" and r.total > 1]
    for r in everything:
        notes.append(f"shard {r.index}/{r.total} ran everything: {r.warning or 'no plan'}")
    for r in records:
        if r.unfinished:
            notes.append(
                f"shard {r.index}/{r.total} stopped before {len(r.unfinished)} of its tests"
            )
    ran = Counter(n for r in records for n in set(r.selected) - set(r.unfinished))
    agreed = Counter(n for r in planned for n in set(r.selected) - set(r.unfinished))
    problems += [f"ran in no shard: {n}" for n in collected if not ran[n]]
    problems += [f"ran in {c} shards: {n}" for n, c in sorted(agreed.items()) if c > 1]
    if everything:
        again = sum(1 for n in collected if ran[n] > 1)
        notes.append(f"{again} tests ran more than once because a shard ran everything")
    return Verdict(problems, notes, len(collected))


def folded_seconds(records: Iterable[ShardRecord]) -> dict[str, float]:
    """Every record's measured seconds in one map (a test run twice keeps the later record's)."""
    merged: dict[str, float] = {}
    for record in records:
        merged.update(record.seconds)
    return merged
