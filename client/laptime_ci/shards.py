"""Which collected tests this CI shard runs: the plan the server pins for the pipeline; with
no server configured, the cached durations, else a stable hash. Never raises for a server
problem: a one-line warning names what the shard did instead.

A shard cannot know which plan its siblings got, so one that was promised the server's plan
and did not get it runs every collected test (a superset cannot leave a test unrun), unless
LAPTIME_SHARD_FALLBACK=cache|hash asks for the risky offline split. Shards that plan offline
agree when they see the same collected tests and the same cache file; no shard run writes
that file (see shard_record), and `laptime-ci shard-verify` checks what the shards ran.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from laptime_ci import transport
from laptime_ci.ci_env import detect_ci

DEFAULT_TIMEOUT_S = 5.0
DEFAULT_CACHE = ".laptime/durations.json"
CACHE_VERSION = 1
# What LAPTIME_SHARD_FALLBACK may ask for when the server gives no plan.
FALLBACKS = ("cache", "hash")
# A collected test's nodeid: a path (no spaces), "::" names, and maybe a "[params]" id
# (which may hold anything); or a bare test file.
# The last name may be empty: pytest names an item collected with name "" `path::`.
_NODEID = re.compile(r"^[^\s:\[\]]*(::[^\s:\[\]]+)*::[^\s:\[\]]*(\[.*\])?$|^[^\s:]+\.py$")


class ShardSpecError(ValueError):
    """`I/N` is not a shard of N (1-based)."""


def parse_shard_spec(text: str) -> tuple[int, int]:
    """ "2/5" -> (2, 5); raises ShardSpecError unless 1 <= I <= N."""
    index_text, sep, total_text = text.partition("/")
    if not sep or not index_text.strip().isdigit() or not total_text.strip().isdigit():
        raise ShardSpecError(f"shard {text!r} is not I/N (e.g. 1/3)")
    index, total = int(index_text), int(total_text)
    if not 1 <= index <= total:
        raise ShardSpecError(f"shard {text!r}: I must be between 1 and N (it is 1-based)")
    return index, total


@dataclass(frozen=True)
class ServerConfig:
    """Where the shards endpoint is; any field missing means "no server"."""

    url: str | None = None
    token: str | None = None
    project: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    # All shards of one CI pipeline run: the server pins one plan to it.
    pipeline: str | None = None

    @property
    def configured(self) -> bool:
        """The shards of this pipeline are meant to take the server's plan."""
        return bool(self.url and self.token and self.project)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> ServerConfig:
        """LAPTIME_URL, LAPTIME_PROJECT and a read token (LAPTIME_READ_TOKEN, else
        LAPTIME_TOKEN); LAPTIME_SHARD_TIMEOUT_S bounds the request; the pipeline is
        LAPTIME_PIPELINE, else the CI service's run id (without the attempt, so a re-run
        shard gets its pipeline's plan)."""
        timeout = env.get("LAPTIME_SHARD_TIMEOUT_S")
        try:
            timeout_s = float(timeout) if timeout else DEFAULT_TIMEOUT_S
        except ValueError:
            timeout_s = DEFAULT_TIMEOUT_S
        return cls(
            url=env.get("LAPTIME_URL") or None,
            token=env.get("LAPTIME_READ_TOKEN") or env.get("LAPTIME_TOKEN") or None,
            project=env.get("LAPTIME_PROJECT") or None,
            timeout_s=timeout_s,
            pipeline=env.get("LAPTIME_PIPELINE") or detect_ci(env).pipeline,
        )


def shard_fallback(env: Mapping[str, str]) -> str | None:
    """LAPTIME_SHARD_FALLBACK when it names an offline split, else None (run everything)."""
    value = (env.get("LAPTIME_SHARD_FALLBACK") or "").strip().lower()
    return value if value in FALLBACKS else None


@dataclass(frozen=True)
class ShardPlan:
    """The tests of one shard and how they were chosen."""

    index: int
    total: int
    nodeids: tuple[str, ...]
    source: str  # "server" | "cache" | "hash" | "all" (no plan: every collected test)
    plan_id: str | None = None
    warning: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    # Names the whole assignment: shards with equal keys partition the same collection.
    plan_key: str = ""


class PlanUnavailable(Exception):
    """The server gave no usable plan (its reason is the message)."""


def fetch_server_split(
    collected: Sequence[str], total: int, server: ServerConfig
) -> tuple[list[list[str]], str | None]:
    """Every shard's nodeids from `POST .../shards` and the plan id if the server gave one.

    All shards are asked for, so the answer can be checked to hold each collected test once.
    """
    if not (server.url and server.token and server.project):
        raise PlanUnavailable("no server configured (LAPTIME_URL, LAPTIME_PROJECT, token)")
    slug = urllib.parse.quote(server.project, safe="")
    params: dict[str, str | int] = {"total": total}
    if server.pipeline:
        # The server pins the pipeline's first answer for every shard: all history counts.
        params["pipeline"] = server.pipeline
    else:
        # History up to yesterday (UTC) only: with no pipeline to pin the plan to, shards
        # asking minutes apart must still see the same history.
        until = datetime.now(timezone.utc).date() - timedelta(days=1)
        params["until"] = until.isoformat()
    query = urllib.parse.urlencode(params)
    endpoint = f"{server.url.rstrip('/')}/api/v1/projects/{slug}/shards?{query}"
    try:
        answer = transport.request(
            "POST",
            endpoint,
            token=server.token,
            data=json.dumps(list(collected)).encode(),
            content_type="application/json",
            timeout_s=server.timeout_s,
        )
    except transport.Unreachable as exc:
        raise PlanUnavailable(str(exc)) from exc
    if answer.status >= 400:
        raise PlanUnavailable(f"server answered {answer.status}: {answer.message()}")
    body = answer.body
    shards = body.get("shards") if isinstance(body, dict) else None
    if not isinstance(shards, list) or len(shards) != total:
        raise PlanUnavailable("server answer holds no plan of that many shards")
    split: list[list[str]] = []
    for shard in sorted(shards, key=lambda s: s.get("index", 0) if isinstance(s, dict) else 0):
        nodeids = shard.get("nodeids") if isinstance(shard, dict) else None
        if not isinstance(nodeids, list) or not all(isinstance(n, str) for n in nodeids):
            raise PlanUnavailable("server answer has a shard without nodeids")
        split.append(list(nodeids))
    if not covers_exactly(split, collected):
        raise PlanUnavailable("server plan does not hold each collected test exactly once")
    plan_id = body.get("plan_id") if isinstance(body, dict) else None
    return split, str(plan_id) if plan_id else None


def covers_exactly(split: Sequence[Sequence[str]], collected: Sequence[str]) -> bool:
    """True when the shards together hold each collected test once and nothing else."""
    flat = [nodeid for shard in split for nodeid in shard]
    return len(flat) == len(set(flat)) and set(flat) == set(collected)


def split_by_durations(
    collected: Sequence[str], durations: Mapping[str, float], total: int
) -> list[list[str]]:
    """Longest first onto the least loaded shard; tests without a duration count the median.

    Deterministic: ties break by nodeid and shard number, so every shard computes the same split.
    """
    known = sorted(v for v in durations.values() if v >= 0)
    median = known[len(known) // 2] if known else 1.0
    weighted = sorted(
        ((durations.get(n, median), n) for n in set(collected)), key=lambda x: (-x[0], x[1])
    )
    loads = [0.0] * total
    split: list[list[str]] = [[] for _ in range(total)]
    for seconds, nodeid in weighted:
        target = min(range(total), key=lambda i: (loads[i], len(split[i]), i))
        loads[target] += seconds
        split[target].append(nodeid)
    return [sorted(shard) for shard in split]


def split_by_hash(collected: Sequence[str], total: int) -> list[list[str]]:
    """Order by sha1 of the nodeid, then deal round-robin: equal counts, stable across runs."""
    ordered = sorted(set(collected), key=lambda n: (hashlib.sha1(n.encode()).hexdigest(), n))
    return [sorted(ordered[i::total]) for i in range(total)]


def load_durations(path: Path | None) -> dict[str, float] | None:
    """The cached nodeid -> seconds, None when there is no usable cache file."""
    if path is None:
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    durations = doc.get("durations") if isinstance(doc, dict) else None
    if not isinstance(durations, dict) or not durations:
        return None
    return {
        str(k): float(v)
        for k, v in durations.items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0
    }


def save_durations(path: Path, measured: Mapping[str, float]) -> None:
    """Merge measured seconds into the cache file (newest wins), written atomically."""
    merged = load_durations(path) or {}
    merged.update({k: round(float(v), 6) for k, v in measured.items()})
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp = tempfile.mkstemp(dir=str(path.parent), prefix=".durations-", suffix=".tmp")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        json.dump({"version": CACHE_VERSION, "durations": merged}, out, sort_keys=True)
    os.replace(tmp, path)


def plan_shard(
    collected: Sequence[str],
    *,
    index: int,
    total: int,
    server: ServerConfig,
    cache_path: Path | None,
    fallback: str | None = None,
) -> ShardPlan:
    """This shard's tests: the server's plan when one is configured (every collected test when
    it gives none, unless `fallback` names an offline split), else the cache, else a hash."""
    labels = {"shard": f"{index}/{total}"}
    if total == 1:
        return ShardPlan(index, total, tuple(collected), "all", None, None, labels, "all")
    if server.configured:
        try:
            split, plan_id = fetch_server_split(collected, total, server)
        except PlanUnavailable as exc:
            reason = str(exc)
        else:
            note = None if server.pipeline else NO_PIPELINE
            key = f"server:{plan_id}" if plan_id else "server"
            return ShardPlan(
                index, total, tuple(split[index - 1]), "server", plan_id, note, labels, key
            )
        if fallback is None:
            warning = (
                f"the server gave no plan ({reason}), so this shard cannot know its siblings' "
                f"and runs all {len(set(collected))} collected tests; set "
                "LAPTIME_SHARD_FALLBACK=cache or hash to split offline instead (safe only when "
                "every shard of the pipeline falls back alike)"
            )
            return ShardPlan(index, total, tuple(collected), "all", None, warning, labels, "all")
        reason = f"{reason}; LAPTIME_SHARD_FALLBACK={fallback}"
    else:
        reason = "no server configured (LAPTIME_URL, LAPTIME_PROJECT, token)"
    durations = load_durations(cache_path) if fallback != "hash" else None
    if durations is not None:
        split = split_by_durations(collected, durations, total)
        warning = f"shard plan from cached durations {cache_path} ({reason})"
        key = f"cache:{durations_digest(durations)}"
        return ShardPlan(index, total, tuple(split[index - 1]), "cache", None, warning, labels, key)
    split = split_by_hash(collected, total)
    warning = f"shard plan by nodeid hash, no cached durations ({reason})"
    return ShardPlan(index, total, tuple(split[index - 1]), "hash", None, warning, labels, "hash")


NO_PIPELINE = (
    "no pipeline id (LAPTIME_PIPELINE or the CI's run id): the server cannot pin one plan "
    "for all shards; run `laptime-ci shard-verify` after the shards"
)


def durations_digest(durations: Mapping[str, float]) -> str:
    """A short name of the cache's content: shards planning from equal caches share it."""
    canonical = json.dumps(sorted(durations.items()), separators=(",", ":"))
    return hashlib.sha1(canonical.encode()).hexdigest()[:12]


def read_collected(text: str) -> list[str]:
    """Nodeids, one a line, as `pytest --collect-only -q` prints them, and nothing else.

    The nodeids come first, one per unindented line; a "====" line opens the summaries
    (warnings, errors) that follow, whose lines may quote nodeids ("Test: a.py::t") or be
    locations of warnings, so reading stops there. Blank lines, counts ("N tests collected")
    and anything with a space outside a parametrize id are not nodeids."""
    out: dict[str, None] = {}
    for line in text.splitlines():
        if line.startswith("="):
            break
        candidate = line.rstrip()
        if _NODEID.match(candidate):
            out[candidate] = None
    return list(out)
