"""POST /api/v1/uploads and the upload status endpoint."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, HTTPException, Request, UploadFile
from fastapi.responses import JSONResponse

from app.api.deps import ConnDep, SettingsDep, grant_of
from app.db.uploads import IncomingFile, get_upload, insert_upload
from ingest.parsers.runners import RUNNERS

router = APIRouter(prefix="/api/v1", tags=["uploads"])


def _labels(pairs: list[str]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise HTTPException(status_code=422, detail=f"label {pair!r} is not key=value")
        labels[key.strip()] = value.strip()
    return labels


def _runner_field(raw: str | None) -> str | None:
    """The `runner` form field (#17): a RUNNERS name, or None to detect it per report."""
    if raw is None or raw in ("", "auto"):
        return None
    if raw not in RUNNERS:
        raise HTTPException(
            status_code=422, detail=f"runner: unknown runner; one of {', '.join(RUNNERS)}"
        )
    return raw


def _float_field(name: str, raw: str | None) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        value = float(raw)
    except ValueError:
        raise HTTPException(
            status_code=422, detail=f"{name} must be a number, got {raw!r}"
        ) from None
    if value < 0:
        raise HTTPException(status_code=422, detail=f"{name} must not be negative")
    return value


@router.post("/uploads", status_code=202)
async def create_upload(
    request: Request,
    conn: ConnDep,
    settings: SettingsDep,
    file: Annotated[list[UploadFile], File(description="report files (gzip allowed)")],
    commit: Annotated[str | None, Form()] = None,
    branch: Annotated[str | None, Form()] = None,
    pipeline: Annotated[str | None, Form()] = None,
    job: Annotated[str | None, Form()] = None,
    machine: Annotated[str | None, Form()] = None,
    label: Annotated[list[str] | None, Form()] = None,
    started_at: Annotated[str | None, Form()] = None,
    wall_s: Annotated[str | None, Form()] = None,
    peak_rss_mib: Annotated[str | None, Form()] = None,
    idempotency_key: Annotated[str | None, Form()] = None,
    runner: Annotated[str | None, Form(description="test runner; default: detected")] = None,
) -> JSONResponse:
    """Store report files from a CI job and queue them for ingestion (202); a repeat gets 200.

    The raw files are committed before the answer, so an accepted upload is never lost.
    """
    grant = grant_of(request, conn)
    if grant is None:
        raise HTTPException(status_code=401, detail="a token is required")
    if not grant.allows("upload"):
        raise HTTPException(status_code=403, detail=f"a {grant.scope} token cannot upload")
    if started_at:
        try:
            parsed = datetime.fromisoformat(started_at.replace("Z", "+00:00"))
        except ValueError:
            raise HTTPException(
                status_code=422, detail=f"started_at is not ISO 8601: {started_at!r}"
            ) from None
        started_at = parsed.isoformat()
    files: list[IncomingFile] = []
    total = 0
    for upload in file:
        data = await upload.read(settings.max_upload_bytes + 1)
        total += len(data)
        if total > settings.max_upload_bytes:
            raise HTTPException(
                status_code=413,
                detail=f"upload exceeds {settings.max_upload_bytes} bytes "
                f"(at {upload.filename or 'file'}); raise LAPTIME_MAX_UPLOAD_BYTES",
            )
        if not data:
            raise HTTPException(status_code=422, detail=f"{upload.filename or 'file'} is empty")
        files.append(IncomingFile(filename=upload.filename or f"file{len(files)}", data=data))
    metadata: dict[str, Any] = {
        "commit": commit,
        "branch": branch,
        "pipeline": pipeline,
        "job": job or "default",
        "machine": machine,
        "labels": _labels(label or []),
        "started_at": started_at,
        "wall_s": _float_field("wall_s", wall_s),
        "peak_rss_mib": _float_field("peak_rss_mib", peak_rss_mib),
        "runner": _runner_field(runner),
    }
    receipt = insert_upload(
        conn,
        grant.project,
        files,
        metadata,
        idempotency_key=idempotency_key or None,
        max_report_bytes=settings.max_report_bytes,
    )
    body = {
        "id": receipt.id,
        "status": receipt.status,
        "url": f"/api/v1/uploads/{receipt.id}",
        "duplicate": receipt.duplicate,
    }
    return JSONResponse(body, status_code=200 if receipt.duplicate else 202)


@router.get("/uploads/{upload_id}")
def read_upload(upload_id: int, request: Request, conn: ConnDep) -> dict[str, Any]:
    """Status of an upload: queued, processing, done (with counts) or failed (with the error)."""
    grant = grant_of(request, conn)
    if grant is None:
        raise HTTPException(status_code=401, detail="a token is required")
    doc = get_upload(conn, upload_id)
    if doc is None:
        raise HTTPException(status_code=404, detail=f"no upload {upload_id}")
    if doc["project_id"] != grant.project.id:
        raise HTTPException(status_code=403, detail="this token belongs to another project")
    return doc
