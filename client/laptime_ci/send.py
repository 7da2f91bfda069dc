"""One upload as a CI step: send, say where it went in one line, optionally wait for ingest.

Shared by `laptime-ci upload` and the server's `laptime upload` so both print the same lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

from laptime_ci.upload import (
    DEFAULT_MAX_TOTAL_S,
    ReportFile,
    UploadError,
    UploadMetadata,
    upload_reports,
    wait_for_upload,
)

# (line, to_stderr)
Echo = Callable[[str, bool], None]


class IngestFailed(UploadError):
    """The server took the upload but could not ingest it (what `--wait` reports)."""


def absolute(url: str, path: str | None) -> str:
    """The server's (relative) link made absolute for a log reader to click."""
    if not path:
        return ""
    return path if "://" in path else url.rstrip("/") + "/" + path.lstrip("/")


def summary_line(answer: dict[str, Any], *, url: str, project: str | None) -> str:
    """`upload 12: queued http://.../api/v1/uploads/12` plus the dashboard when known."""
    note = ""
    if answer.get("requeued"):
        note = " (sent before and failed: re-queued)"
    elif answer.get("duplicate"):
        note = " (already uploaded)"
    link = absolute(url, answer.get("url"))
    line = f"upload {answer.get('id')}: {answer.get('status')}{note} {link}"
    dashboard = answer.get("dashboard_url") or (f"/p/{project}" if project else None)
    if dashboard:
        line += f" dashboard: {absolute(url, dashboard)}"
    return line


def send_and_report(
    files: Sequence[ReportFile],
    *,
    url: str,
    token: str,
    metadata: UploadMetadata,
    echo: Echo,
    retries: int = 4,
    max_total_s: float = DEFAULT_MAX_TOTAL_S,
    wait: bool = False,
    poll_s: float = 1.0,
    wait_timeout_s: float = 600,
    project: str | None = None,
) -> dict[str, Any]:
    """Upload, echo the summary, and with `wait` poll to the final status.

    Returns the last answer; raises UploadError when sending fails or ingest failed.
    """
    answer = upload_reports(
        files, url=url, token=token, metadata=metadata, retries=retries, max_total_s=max_total_s
    )
    echo(summary_line(answer, url=url, project=project), False)
    if not wait:
        return answer
    upload_id = answer.get("id")
    if upload_id is None:
        raise UploadError("server answer has no upload id to wait for")
    last: list[str | None] = [None]

    def show(status_answer: dict[str, Any]) -> None:
        status = str(status_answer.get("status"))
        if status != last[0]:
            last[0] = status
            echo(f"  status: {status}", True)

    final = wait_for_upload(
        url, upload_id, token=token, poll_s=poll_s, timeout_s=wait_timeout_s, on_status=show
    )
    for warning in final.get("warnings") or []:
        echo(f"warning: {warning}", True)
    if final.get("status") == "failed":
        code = final.get("error_code") or "failed"
        detail = final.get("error_detail") or "no detail"
        raise IngestFailed(f"upload {upload_id} failed: [{code}] {detail}")
    counts = final.get("counts") or {}
    shown = ", ".join(f"{key}={value}" for key, value in sorted(counts.items()))
    echo(f"upload {upload_id}: done" + (f" ({shown})" if shown else ""), False)
    return final
