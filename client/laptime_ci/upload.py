"""The uploader: `POST /api/v1/uploads` with jittered, bounded retries, and the status calls.

Used by `laptime-ci upload`, the server's `laptime upload` and the pytest plugin's
`--laptime-upload`; the multipart field names are a stable contract with the server (app/api).
"""

from __future__ import annotations

import email.utils
import gzip
import hashlib
import random
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any, Callable

from laptime_ci import transport
from laptime_ci.ci_env import detect_ci, job_wall_s
from laptime_ci.labels import parse_labels

UPLOADS_PATH = "/api/v1/uploads"
GZIP_MAGIC = b"\x1f\x8b"
FINAL_STATUSES = ("done", "failed")
# The whole upload, every retry and wait included, stays under this by default: a CI job
# must not hang on an unhealthy server.
DEFAULT_MAX_TOTAL_S = 60.0
# Statuses worth retrying: the server (or a proxy) says "later", not "never".
RETRY_STATUSES = frozenset({429, 502, 503, 504})

ReportFile = tuple[str, bytes]
Sleep = Callable[[float], None]


class UploadError(Exception):
    """The server refused the upload (4xx) or kept failing until the retry budget ran out."""

    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code


@dataclass(frozen=True)
class UploadMetadata:
    """What the server stores on the run next to the report (all optional)."""

    commit: str | None = None
    branch: str | None = None
    pipeline: str | None = None
    job: str | None = None
    machine: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    pull_request: str | None = None
    runner_os: str | None = None
    plan_id: str | None = None  # the server's shard plan this run executed
    started_at: str | None = None
    wall_s: float | None = None
    peak_rss_mib: float | None = None
    # The CI job's wall from its start to now (setup included): the job model's fixed CI
    # setup is this minus the pytest wall. Known from LAPTIME_JOB_STARTED_AT or the CI.
    job_wall_s: float | None = None
    idempotency_key: str | None = None
    # Keep the report's own timestamp however old (importing history).
    backfill: bool = False
    # HEAD and its first parents, newest first (laptime_ci.git_history): the commits between
    # two runs, for the bisect list of a change.
    first_parents: tuple[str, ...] = ()
    # `sha:number` of those commits whose message names the pull or merge request they came in.
    merged_requests: tuple[str, ...] = ()

    def with_session(
        self,
        *,
        started_at: str | None = None,
        wall_s: float | None = None,
        peak_rss_mib: float | None = None,
    ) -> UploadMetadata:
        """Fill the session numbers a report knows, keeping values already set."""
        return replace(
            self,
            started_at=self.started_at or started_at,
            wall_s=self.wall_s if self.wall_s is not None else wall_s,
            peak_rss_mib=self.peak_rss_mib if self.peak_rss_mib is not None else peak_rss_mib,
        )

    def form_fields(self) -> list[tuple[str, str]]:
        """The multipart text fields, leaving out unknown values."""
        fields: list[tuple[str, str]] = []
        for name in (
            "commit",
            "branch",
            "pipeline",
            "job",
            "machine",
            "pull_request",
            "runner_os",
            "plan_id",
        ):
            value = getattr(self, name)
            if value:
                fields.append((name, str(value)))
        fields.extend(("label", f"{key}={value}") for key, value in sorted(self.labels.items()))
        if self.started_at:
            fields.append(("started_at", self.started_at))
        if self.wall_s is not None:
            fields.append(("wall_s", repr(float(self.wall_s))))
        if self.peak_rss_mib is not None:
            fields.append(("peak_rss_mib", repr(float(self.peak_rss_mib))))
        if self.job_wall_s is not None:
            fields.append(("job_wall_s", repr(float(self.job_wall_s))))
        if self.idempotency_key:
            fields.append(("idempotency_key", self.idempotency_key))
        if self.backfill:
            fields.append(("backfill", "true"))
        fields.extend(("first_parent", sha) for sha in self.first_parents)
        fields.extend(("merged_request", entry) for entry in self.merged_requests)
        return fields


def detect_ci_metadata(env: Mapping[str, str]) -> dict[str, str]:
    """commit, branch, pipeline, job, pull request and runner OS of the CI service running us
    (unknown keys left out).

    A re-run attempt is a new pipeline run with its own wait time, so the attempt joins the
    pipeline id.
    """
    info = detect_ci(env)
    pipeline = info.pipeline
    if pipeline and info.run_attempt:
        pipeline = f"{pipeline}-{info.run_attempt}"
    found = {
        "commit": info.commit,
        "branch": info.branch,
        "pipeline": pipeline,
        "job": info.job,
        "pull_request": info.pr,
        "runner_os": info.os,
    }
    return {key: value for key, value in found.items() if value}


def metadata_from_env(env: Mapping[str, str]) -> UploadMetadata:
    """Metadata from the CI environment plus LAPTIME_PIPELINE, LAPTIME_JOB, LAPTIME_MACHINE,
    LAPTIME_LABELS and the job's wall so far (LAPTIME_JOB_STARTED_AT, or the CI service's own
    job start). LAPTIME_PIPELINE names the run's pipeline as it names the shards' and the
    queue's, so a pipeline's jobs are one pipeline in every view."""
    ci = detect_ci_metadata(env)
    labels_text = env.get("LAPTIME_LABELS", "")
    # A comma-separated list: spaces around each item are layout, not part of the label.
    labels = parse_labels([p.strip() for p in labels_text.split(",") if p.strip()])
    return UploadMetadata(
        commit=ci.get("commit"),
        branch=ci.get("branch"),
        pipeline=env.get("LAPTIME_PIPELINE") or ci.get("pipeline"),
        job=env.get("LAPTIME_JOB") or ci.get("job"),
        machine=env.get("LAPTIME_MACHINE") or None,
        labels=labels,
        pull_request=ci.get("pull_request"),
        runner_os=ci.get("runner_os"),
        job_wall_s=job_wall_s(env),
    )


def gzipped(data: bytes) -> bytes:
    """The bytes gzip-compressed, unless they already are."""
    if data[:2] == GZIP_MAGIC:
        return data
    # mtime=0 keeps the bytes (and so the idempotency key's hash) reproducible.
    return gzip.compress(data, compresslevel=6, mtime=0)


def default_idempotency_key(files: Sequence[ReportFile], metadata: UploadMetadata) -> str:
    """A key from pipeline, job, machine, labels and the reports' content: the same upload
    retried is one upload, while matrix cells sending identical bytes stay apart."""
    digest = hashlib.sha256()
    # Keys and values as separate parts: `a=b`:`c` and `a`:`b=c` are different cells.
    labels = [part for item in sorted(metadata.labels.items()) for part in item]
    for part in (metadata.pipeline or "", metadata.job or "", metadata.machine or "", *labels):
        digest.update(part.encode())
        digest.update(b"\0")
    for name, data in files:
        digest.update(name.encode())
        digest.update(b"\0")
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()[:40]


def multipart_body(
    fields: Sequence[tuple[str, str]], files: Sequence[tuple[str, str, bytes]]
) -> tuple[bytes, str]:
    """multipart/form-data bytes and their Content-Type from text fields and (field, name,
    bytes) files."""
    boundary = f"laptime-{uuid.uuid4().hex}"
    parts: list[bytes] = []
    for name, value in fields:
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"\r\n\r\n'
        parts.append(head.encode() + value.encode() + b"\r\n")
    for name, filename, data in files:
        head = (
            f'--{boundary}\r\nContent-Disposition: form-data; name="{_quoted(name)}"; '
            f'filename="{_quoted(filename)}"\r\nContent-Type: application/gzip\r\n\r\n'
        )
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _quoted(text: str) -> str:
    # A file name is the user's; quotes and line breaks would end the header early.
    return text.replace("\\", "\\\\").replace('"', "%22").replace("\r", "%0D").replace("\n", "%0A")


def retry_after_s(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """Retry-After in seconds (delta-seconds or an HTTP date); None when absent or unreadable."""
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - (now or datetime.now(timezone.utc))).total_seconds())


def backoff_delays(
    retries: int, backoff_s: float, rng: Callable[[], float] = random.random
) -> list[float]:
    """Jittered exponential delays: attempt n waits backoff * 2**n scaled by [0.5, 1)."""
    return [backoff_s * (2**n) * (0.5 + rng() / 2) for n in range(retries)]


def upload_reports(
    files: Sequence[ReportFile],
    *,
    url: str,
    token: str,
    metadata: UploadMetadata,
    retries: int = 4,
    backoff_s: float = 0.5,
    timeout_s: float = 30,
    max_total_s: float = DEFAULT_MAX_TOTAL_S,
    sleep: Sleep = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    rng: Callable[[], float] = random.random,
) -> dict[str, Any]:
    """POST the reports (gzipped) as one upload; returns the server's JSON answer.

    Connection errors, 429 and 5xx are retried with jittered exponential backoff (a
    Retry-After header wins) while the next try still fits in `max_total_s`; raises
    UploadError on any other 4xx or when the retries or the time run out.
    """
    if not files:
        raise UploadError("nothing to upload")
    if metadata.idempotency_key is None:
        metadata = replace(metadata, idempotency_key=default_idempotency_key(files, metadata))
    body, content_type = multipart_body(
        metadata.form_fields(),
        [
            ("file", name if name.endswith(".gz") else f"{name}.gz", gzipped(data))
            for name, data in files
        ],
    )
    endpoint = url.rstrip("/") + UPLOADS_PATH
    delays = backoff_delays(retries, backoff_s, rng)
    deadline = clock() + max_total_s
    last_problem = "no attempt made"
    attempts = 0
    for attempt in range(retries + 1):
        attempts += 1
        remaining = deadline - clock()
        wait_hint: float | None = None
        try:
            answer = transport.request(
                "POST",
                endpoint,
                token=token,
                data=body,
                content_type=content_type,
                timeout_s=max(1.0, min(timeout_s, remaining)),
            )
        except transport.Unreachable as exc:
            last_problem = str(exc)
        else:
            if answer.status < 400:
                return _json_object(answer)
            if answer.status not in RETRY_STATUSES and answer.status < 500:
                raise UploadError(
                    f"upload refused ({answer.status}): {answer.message()}",
                    status_code=answer.status,
                )
            last_problem = f"server error ({answer.status}): {answer.message()}"
            wait_hint = retry_after_s(answer.headers)
        if attempt == retries:
            break
        delay = delays[attempt] if wait_hint is None else wait_hint
        if clock() + delay >= deadline:
            last_problem += f" (next try in {delay:.1f} s would pass the {max_total_s:g} s budget)"
            break
        sleep(delay)
    raise UploadError(f"upload failed after {attempts} attempts: {last_problem}")


def _json_object(answer: transport.Answer) -> dict[str, Any]:
    if not isinstance(answer.body, dict):
        raise UploadError(
            f"server answered {answer.status} without a JSON object", status_code=answer.status
        )
    return answer.body


def _call(method: str, endpoint: str, *, token: str, what: str, timeout_s: float) -> dict[str, Any]:
    """One status-style request: its JSON object, or UploadError naming `what` failed."""
    try:
        answer = transport.request(method, endpoint, token=token, timeout_s=timeout_s)
    except transport.Unreachable as exc:
        raise UploadError(str(exc)) from exc
    if answer.status >= 400:
        raise UploadError(
            f"{what} ({answer.status}): {answer.message()}", status_code=answer.status
        )
    return _json_object(answer)


def fetch_upload(upload_url: str, *, token: str, timeout_s: float = 30) -> dict[str, Any]:
    """GET one upload's status document; raises UploadError on a 4xx/5xx or no answer."""
    return _call("GET", upload_url, token=token, what="status query failed", timeout_s=timeout_s)


def wait_for_upload(
    url: str,
    upload_id: Any,
    *,
    token: str,
    poll_s: float = 1.0,
    timeout_s: float = 600,
    on_status: Callable[[dict[str, Any]], None] | None = None,
    sleep: Sleep = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Poll `GET /api/v1/uploads/{id}` until done or failed; returns the last answer.

    Transient errors and 5xx are retried until the timeout; raises UploadError on timeout or
    a 4xx.
    """
    upload_url = f"{url.rstrip('/')}{UPLOADS_PATH}/{upload_id}"
    deadline = clock() + timeout_s
    while True:
        try:
            answer: dict[str, Any] | None = fetch_upload(
                upload_url, token=token, timeout_s=min(30.0, timeout_s)
            )
        except UploadError as exc:
            if exc.status_code is not None and exc.status_code < 500:
                raise
            answer = None
        if answer is not None:
            if on_status is not None:
                on_status(answer)
            if answer.get("status") in FINAL_STATUSES:
                return answer
        if clock() + poll_s > deadline:
            raise UploadError(f"upload {upload_id} not finished after {timeout_s:g} s")
        sleep(poll_s)


def retry_upload(url: str, upload_id: int, *, token: str, timeout_s: float = 30) -> dict[str, Any]:
    """`POST /api/v1/uploads/{id}/retry`: put a failed upload back in the queue.

    Returns the server's answer; raises UploadError when refused or unreachable.
    """
    endpoint = f"{url.rstrip('/')}{UPLOADS_PATH}/{upload_id}/retry"
    return _call("POST", endpoint, token=token, what="retry refused", timeout_s=timeout_s)
