"""Upload one laptime JSON report with the CI environment's metadata: the plugin's
`--laptime-upload` at session end, or `laptime-ci run` after the process exits."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any


def upload_document(
    document: dict[str, Any],
    data: bytes,
    path: Path | None,
    *,
    labels: dict[str, str],
    plan_id: str | None = None,
) -> tuple[str, bool]:
    """Upload the report with this environment's CI metadata, `labels` (the shard run) and the
    shard plan's id; returns a summary line. Never raises: the tests' outcome is the job's."""
    url = os.environ.get("LAPTIME_URL")
    token = os.environ.get("LAPTIME_TOKEN")
    if not url or not token:
        return "upload skipped: set LAPTIME_URL and LAPTIME_TOKEN", True
    try:
        from laptime_ci.send import summary_line
        from laptime_ci.upload import metadata_from_env, upload_reports

        session = document["session"]
        metadata = metadata_from_env(os.environ).with_session(
            started_at=session["started_at"],
            wall_s=session["wall_s"],
            peak_rss_mib=session["peak_rss_mib"],
        )
        from laptime_ci.git_history import checkout_history

        history = checkout_history(os.environ)
        metadata = replace(
            metadata,
            labels={**metadata.labels, **labels},
            plan_id=plan_id or metadata.plan_id,
            first_parents=history.first_parents,
            merged_requests=history.merged_requests,
        )
        name = path.name if path is not None else "laptime.json"
        retries = int(os.environ.get("LAPTIME_UPLOAD_RETRIES", "4"))
        max_total_s = float(os.environ.get("LAPTIME_UPLOAD_MAX_TIME_S", "60"))
        answer = upload_reports(
            [(name, data)],
            url=url,
            token=token,
            metadata=metadata,
            retries=retries,
            max_total_s=max_total_s,
        )
    except Exception as exc:  # an upload problem must never fail the test run
        return f"upload failed: {exc}", True
    line = summary_line(answer, url=url, project=os.environ.get("LAPTIME_PROJECT"))
    return f"uploaded {len(document['tests'])} tests as {line}", False
