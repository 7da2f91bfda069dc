"""The queue API as the CI node calls it (standard library only): open or join, claim, start,
finish, beat, release, status. A server that cannot be reached (or answers 5xx) raises
QueueUnavailable, which the node turns into its fallback; a 4xx raises QueueRefused."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from laptime_ci import transport
from laptime_ci.ci_env import detect_ci

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_LEASE_S = 120.0


class QueueUnavailable(Exception):
    """No usable answer from the queue server (unreachable, timeout, 5xx)."""


class QueueRefused(Exception):
    """The server refused the request (4xx): its code and words."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status, self.code, self.detail = status, code, detail


@dataclass(frozen=True)
class QueueConfig:
    """Where the queue is and who this node is; `configured` False without a server."""

    url: str | None
    token: str | None
    project: str | None
    pipeline: str | None
    node: str
    attempt: int
    total: int
    timeout_s: float = DEFAULT_TIMEOUT_S
    lease_s: float = DEFAULT_LEASE_S
    # The smallest batch this node asks for (LAPTIME_QUEUE_MIN_BATCH_S), over the floor its
    # measured cost per call sets.
    min_batch_s: float = 0.0

    @property
    def configured(self) -> bool:
        """A server, a token, a project and a pipeline to queue for."""
        return bool(self.url and self.token and self.project and self.pipeline)

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, index: int, total: int) -> QueueConfig:
        """LAPTIME_URL, LAPTIME_TOKEN (the CI upload token), LAPTIME_PROJECT; the pipeline is
        LAPTIME_PIPELINE or the CI's run id, the attempt LAPTIME_ATTEMPT or the CI's."""
        ci = detect_ci(env)
        attempt_text = env.get("LAPTIME_ATTEMPT") or ci.run_attempt or "1"
        lease = env.get("LAPTIME_QUEUE_LEASE_S")
        return cls(
            url=env.get("LAPTIME_URL") or None,
            token=env.get("LAPTIME_TOKEN") or None,
            project=env.get("LAPTIME_PROJECT") or None,
            pipeline=env.get("LAPTIME_PIPELINE") or ci.pipeline,
            node=str(index),
            attempt=int(attempt_text) if attempt_text.isdigit() else 1,
            total=total,
            timeout_s=_float(env.get("LAPTIME_QUEUE_TIMEOUT_S"), DEFAULT_TIMEOUT_S),
            lease_s=_float(lease, DEFAULT_LEASE_S),
            min_batch_s=max(_float(env.get("LAPTIME_QUEUE_MIN_BATCH_S"), 0.0), 0.0),
        )


def _float(text: str | None, default: float) -> float:
    try:
        return float(text) if text else default
    except ValueError:
        return default


class QueueClient:
    """One node's calls to its pipeline's queue."""

    def __init__(self, config: QueueConfig) -> None:
        self.config = config
        slug = urllib.parse.quote(config.project or "", safe="")
        self.base = f"{(config.url or '').rstrip('/')}/api/v1/projects/{slug}/queues"
        self.queue_id: int | None = None

    @property
    def who(self) -> dict[str, Any]:
        """The node and attempt every call names."""
        return {"node": self.config.node, "attempt": self.config.attempt}

    def _post(self, path: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._call("POST", path, json.dumps(body).encode())

    def _call(self, method: str, path: str, data: bytes | None = None) -> dict[str, Any]:
        try:
            answer = transport.request(
                method,
                f"{self.base}{path}",
                token=self.config.token,
                data=data,
                content_type="application/json" if data is not None else None,
                timeout_s=self.config.timeout_s,
            )
        except transport.Unreachable as exc:
            raise QueueUnavailable(str(exc)) from exc
        if answer.status >= 500:
            raise QueueUnavailable(f"server answered {answer.status}: {answer.message()}")
        if answer.status >= 400:
            code = answer.body.get("code", "") if isinstance(answer.body, dict) else ""
            raise QueueRefused(answer.status, str(code), answer.message())
        return dict(answer.body) if isinstance(answer.body, dict) else {}

    def open(
        self, collected: Sequence[str], runner: str = "pytest", budget_s: float | None = None
    ) -> dict[str, Any]:
        """Open or join the pipeline's queue."""
        body = {
            "budget_s": budget_s,
            **self.who,
            "pipeline": self.config.pipeline,
            "collected": list(collected),
            "nodes": self.config.total,
            "runner": runner,
        }
        answer = self._post("", body)
        self.queue_id = int(answer["queue_id"])
        return answer

    def claim(
        self,
        remaining_s: float | None,
        min_batch_s: float = 0.0,
        *,
        segmented: bool = False,
        min_segment_s: float = 0.0,
        pace: float | None = None,
    ) -> dict[str, Any]:
        """The next batch (or why none); `segmented`: only its first segment begun; `pace`:
        this node's measured / predicted seconds so far."""
        body = {**self.who, "remaining_s": remaining_s, "min_batch_s": min_batch_s,
                "lease_s": self.config.lease_s, "segmented": segmented,
                "min_segment_s": min_segment_s, "paced": True}  # fmt: skip
        if pace is not None:
            body["pace"] = round(min(max(pace, 0.001), 1000.0), 4)
        return self._post(f"/{self.queue_id}/claims", body)

    def start(
        self, claim_id: int, *, segment: bool = False, min_segment_s: float = 0.0
    ) -> list[int]:
        """Begin the batch's items not begun yet (or its next segment): the positions this
        node may run (a sibling may have taken over the rest)."""
        body = {"segment": segment, "min_segment_s": min_segment_s}
        answer = self._post(f"/{self.queue_id}/claims/{claim_id}/start", body)
        return [int(p) for p in answer.get("started") or []]

    def finish(self, claim_id: int, results: Sequence[tuple[str, float, str]]) -> dict[str, Any]:
        """The batch's measured results."""
        body = {"results": [{"nodeid": n, "duration_s": round(max(s, 0.0), 6), "outcome": o}
                            for n, s, o in results]}  # fmt: skip
        return self._post(f"/{self.queue_id}/claims/{claim_id}/finish", body)

    def heartbeat(self) -> None:
        """Keep this node's claims leased."""
        self._post(f"/{self.queue_id}/heartbeat", {**self.who, "lease_s": self.config.lease_s})

    def release(self, reason: str) -> dict[str, Any]:
        """Hand this node's open claims back; what is left pending."""
        return self._post(f"/{self.queue_id}/release", {**self.who, "reason": reason})

    def status(self) -> dict[str, Any]:
        """The queue's report."""
        return self._call("GET", f"/{self.queue_id}")

    def pipeline_status(self) -> dict[str, Any]:
        """The report of this pipeline's queue."""
        query = urllib.parse.urlencode({"pipeline": self.config.pipeline or ""})
        return self._call("GET", f"/pipeline?{query}")


class LeaseKeeper:
    """Beats in a thread every lease/4 while the node works; a failed beat is retried at the
    next tick (a lost lease costs a test run twice, never a test unrun)."""

    def __init__(self, client: QueueClient) -> None:
        self.client = client
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="laptime-lease", daemon=True)

    def __enter__(self) -> LeaseKeeper:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=self.client.config.timeout_s + 1)

    def _run(self) -> None:
        interval = max(self.client.config.lease_s / 4, 0.25)
        while not self._stop.wait(interval):
            try:
                self.client.heartbeat()
            except (QueueUnavailable, QueueRefused):
                continue
