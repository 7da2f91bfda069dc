"""The upload client: CI metadata detection and `POST /api/v1/uploads` with retries.

Used by `laptime upload` and by the pytest plugin's `--laptime-upload`; the multipart field
names here are a stable contract with the server (app/api).
"""

from __future__ import annotations

import gzip
import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

# Re-exported: the client's callers parse `--label k=v` with the same rules as the server.
from app.labels import parse_labels as parse_labels

UPLOADS_PATH = "/api/v1/uploads"
GZIP_MAGIC = b"\x1f\x8b"
FINAL_STATUSES = ("done", "failed")


class UploadError(Exception):
    """The server refused the upload (4xx) or kept failing after every retry."""

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
    started_at: str | None = None
    wall_s: float | None = None
    peak_rss_mib: float | None = None
    idempotency_key: str | None = None

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
        for name in ("commit", "branch", "pipeline", "job", "machine"):
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
        if self.idempotency_key:
            fields.append(("idempotency_key", self.idempotency_key))
        return fields


def _first(env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        value = env.get(name)
        if value:
            return value
    return None


def detect_ci_metadata(env: Mapping[str, str]) -> dict[str, str]:
    """commit, branch, pipeline and job from GitHub Actions, GitLab CI, CircleCI or Buildkite.

    Keys whose value the environment does not tell are left out.
    """
    found: dict[str, str | None]
    if env.get("GITHUB_ACTIONS") == "true" or "GITHUB_RUN_ID" in env:
        run_id = env.get("GITHUB_RUN_ID")
        attempt = env.get("GITHUB_RUN_ATTEMPT")
        found = {
            "commit": env.get("GITHUB_SHA"),
            # GITHUB_REF_NAME is "123/merge" on pull requests; the head ref is the branch.
            "branch": _first(env, "GITHUB_HEAD_REF", "GITHUB_REF_NAME"),
            # A re-run attempt is a new pipeline run with its own wait time.
            "pipeline": f"{run_id}-{attempt}" if run_id and attempt else run_id,
            "job": env.get("GITHUB_JOB"),
        }
    elif env.get("GITLAB_CI") == "true" or "CI_PIPELINE_ID" in env:
        found = {
            "commit": env.get("CI_COMMIT_SHA"),
            "branch": env.get("CI_COMMIT_REF_NAME"),
            "pipeline": env.get("CI_PIPELINE_ID"),
            "job": env.get("CI_JOB_NAME"),
        }
    elif env.get("CIRCLECI") == "true" or "CIRCLE_WORKFLOW_ID" in env:
        found = {
            "commit": env.get("CIRCLE_SHA1"),
            "branch": env.get("CIRCLE_BRANCH"),
            "pipeline": env.get("CIRCLE_WORKFLOW_ID"),
            "job": env.get("CIRCLE_JOB"),
        }
    elif env.get("BUILDKITE") == "true" or "BUILDKITE_BUILD_ID" in env:
        found = {
            "commit": env.get("BUILDKITE_COMMIT"),
            "branch": env.get("BUILDKITE_BRANCH"),
            "pipeline": env.get("BUILDKITE_BUILD_ID"),
            "job": _first(env, "BUILDKITE_LABEL", "BUILDKITE_STEP_KEY"),
        }
    else:
        found = {}
    return {key: value for key, value in found.items() if value}


def metadata_from_env(env: Mapping[str, str]) -> UploadMetadata:
    """Metadata from the CI environment plus LAPTIME_JOB, LAPTIME_MACHINE, LAPTIME_LABELS."""
    ci = detect_ci_metadata(env)
    labels_text = env.get("LAPTIME_LABELS", "")
    # A comma-separated list: spaces around each item are layout, not part of the label.
    labels = parse_labels([p.strip() for p in labels_text.split(",") if p.strip()])
    return UploadMetadata(
        commit=ci.get("commit"),
        branch=ci.get("branch"),
        pipeline=ci.get("pipeline"),
        job=env.get("LAPTIME_JOB") or ci.get("job"),
        machine=env.get("LAPTIME_MACHINE") or None,
        labels=labels,
    )


def gzipped(data: bytes) -> bytes:
    """The bytes gzip-compressed, unless they already are."""
    if data[:2] == GZIP_MAGIC:
        return data
    # mtime=0 keeps the bytes (and so the idempotency key's hash) reproducible.
    return gzip.compress(data, compresslevel=6, mtime=0)


def default_idempotency_key(files: Sequence[tuple[str, bytes]], metadata: UploadMetadata) -> str:
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


def _server_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and "detail" in body:
        detail = body["detail"]
        if isinstance(detail, list):  # FastAPI validation errors: a list of {loc, msg}
            parts = [
                f"{'.'.join(str(p) for p in item.get('loc', []))}: {item.get('msg')}"
                if isinstance(item, dict)
                else str(item)
                for item in detail
            ]
            return "; ".join(parts)
        return str(detail)
    text = response.text.strip()
    return text[:500] or response.reason_phrase


def _retry_delays(retries: int, backoff_s: float) -> list[float]:
    return [backoff_s * (2**attempt) for attempt in range(retries)]


def upload_reports(
    files: Sequence[tuple[str, bytes]],
    *,
    url: str,
    token: str,
    metadata: UploadMetadata,
    retries: int = 4,
    backoff_s: float = 0.5,
    timeout_s: float = 60,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """POST the reports (gzipped) as one upload; retries connection errors and 5xx.

    Returns the server's JSON answer; raises UploadError on a 4xx or when retries run out.
    """
    if not files:
        raise UploadError("nothing to upload")
    if metadata.idempotency_key is None:
        metadata = replace(metadata, idempotency_key=default_idempotency_key(files, metadata))
    multipart = [
        (
            "file",
            (name if name.endswith(".gz") else f"{name}.gz", gzipped(data), "application/gzip"),
        )
        for name, data in files
    ]
    endpoint = url.rstrip("/") + UPLOADS_PATH
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    form: dict[str, list[str]] = {}
    for name, value in metadata.form_fields():
        form.setdefault(name, []).append(value)
    delays = _retry_delays(retries, backoff_s)
    last_problem = "no attempt made"
    with httpx.Client(timeout=timeout_s) as client:
        for attempt in range(retries + 1):
            try:
                response = client.post(endpoint, headers=headers, data=form, files=multipart)
            except httpx.TransportError as exc:
                last_problem = f"cannot reach {endpoint}: {exc}"
            else:
                if response.status_code < 400:
                    return _json_answer(response)
                message = _server_message(response)
                if response.status_code < 500:
                    raise UploadError(
                        f"upload refused ({response.status_code}): {message}",
                        status_code=response.status_code,
                    )
                last_problem = f"server error ({response.status_code}): {message}"
            if attempt < retries:
                sleep(delays[attempt])
    raise UploadError(f"upload failed after {retries + 1} attempts: {last_problem}")


def _json_answer(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError as exc:
        raise UploadError(
            f"server answered {response.status_code} without JSON", status_code=response.status_code
        ) from exc
    if not isinstance(body, dict):
        raise UploadError("server answer is not a JSON object", status_code=response.status_code)
    return body


def fetch_upload(
    upload_url: str, *, token: str, timeout_s: float = 30, client: httpx.Client | None = None
) -> dict[str, Any]:
    """GET one upload's status document; raises UploadError on a 4xx/5xx answer."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    owned = client is None
    session = client if client is not None else httpx.Client(timeout=timeout_s)
    try:
        response = session.get(upload_url, headers=headers)
    except httpx.TransportError as exc:
        raise UploadError(f"cannot reach {upload_url}: {exc}") from exc
    finally:
        if owned:
            session.close()
    if response.status_code >= 400:
        raise UploadError(
            f"status query failed ({response.status_code}): {_server_message(response)}",
            status_code=response.status_code,
        )
    return _json_answer(response)


def wait_for_upload(
    url: str,
    upload_id: int | str,
    *,
    token: str,
    poll_s: float = 1.0,
    timeout_s: float = 600,
    on_status: Callable[[dict[str, Any]], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, Any]:
    """Poll `GET /api/v1/uploads/{id}` until done or failed; returns the last answer.

    Transient connection errors and 5xx are retried until the timeout; raises UploadError
    on timeout or a 4xx.
    """
    upload_url = f"{url.rstrip('/')}{UPLOADS_PATH}/{upload_id}"
    deadline = clock() + timeout_s
    with httpx.Client(timeout=min(30.0, timeout_s)) as client:
        while True:
            try:
                answer = fetch_upload(upload_url, token=token, client=client)
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
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    try:
        response = httpx.post(endpoint, headers=headers, timeout=timeout_s)
    except httpx.TransportError as exc:
        raise UploadError(f"cannot reach {endpoint}: {exc}") from exc
    if response.status_code >= 400:
        raise UploadError(
            f"retry refused ({response.status_code}): {_server_message(response)}",
            status_code=response.status_code,
        )
    return _json_answer(response)
