"""POST /api/v1/uploads, the upload status endpoint and the retry of a failed upload.

Every route here is a plain `def`: FastAPI runs it in the thread pool, so the database waits
(a concurrent identical upload waits for the first one's commit) and the hashing of the
decompressed reports never block the event loop. Every transaction commits before the answer
is sent (the upload's own block, the connection dependency's function scope), so a 202 means
the raw files are committed.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy import Connection

from app.http.deps import (
    ConnDep,
    ConnectionSlot,
    EngineDep,
    SettingsDep,
    grant_of,
    record_noted_auth_failure,
)
from app.http.errors import ApiError
from app.http.responses import answers
from app.project_records import TokenGrant
from app.schemas.uploads import Requeued, UploadDocument, UploadReceipt
from app.services.uploads import (
    IncomingFile,
    UploadStatus,
    content_digest,
    get_upload,
    insert_upload,
    requeue_upload,
    transaction,
)
from app.services.uploads import UploadReceipt as Receipt
from app.settings import Settings
from app.uploads.form import UploadForm
from app.uploads.guard import GRANT_STATE_KEY

router = APIRouter(prefix="/api/v1", tags=["uploads"])
READ_CHUNK_BYTES = 1 << 20


def _grant(request: Request, conn: Connection, action: str) -> TokenGrant:
    """The request's grant for `action` (the upload guard may have resolved it already)."""
    grant: TokenGrant | None = getattr(request.state, GRANT_STATE_KEY, None)
    if grant is None:
        grant = grant_of(request, conn)
    if grant is None:
        raise ApiError(401, "token-required", "a token is required")
    if not grant.allows(action):
        raise ApiError(403, "token-scope", f"a {grant.scope} token cannot {action}")
    return grant


def _read_files(files: list[UploadFile], max_bytes: int) -> list[IncomingFile]:
    """The files' bytes, refused past max_bytes in total (read in chunks, never more)."""
    incoming: list[IncomingFile] = []
    total = 0
    for upload in files:
        name = upload.filename or f"file{len(incoming)}"
        parts: list[bytes] = []
        while chunk := upload.file.read(min(READ_CHUNK_BYTES, max_bytes - total + 1)):
            total += len(chunk)
            if total > max_bytes:
                raise ApiError(
                    413,
                    "upload-too-large",
                    f"upload exceeds {max_bytes} bytes (at {name}); raise LAPTIME_MAX_UPLOAD_BYTES",
                )
            parts.append(chunk)
        data = b"".join(parts)
        if not data:
            raise invalid_file(len(incoming), f"{name} is empty")
        incoming.append(IncomingFile(filename=name, data=data))
    return incoming


def invalid_file(position: int, message: str) -> RequestValidationError:
    """A 422 naming the upload's `position`-th file, shaped like FastAPI's own."""
    return RequestValidationError(
        [{"type": "value_error", "loc": ("body", "file", position), "msg": message}]
    )


def _answer(receipt: Receipt) -> JSONResponse:
    body = UploadReceipt(
        id=receipt.id,
        status=receipt.status,
        url=f"/api/v1/uploads/{receipt.id}",
        duplicate=receipt.duplicate,
        requeued=receipt.requeued,
    )
    return JSONResponse(body.model_dump(), status_code=200 if receipt.duplicate else 202)


@router.post(
    "/uploads",
    status_code=202,
    **answers(
        UploadReceipt,
        400,
        401,
        403,
        413,
        422,
        429,
        responses={
            200: {
                "description": "a repeat of an earlier upload (re-queued if it had failed)",
                "model": UploadReceipt,
            }
        },
    ),
)
def create_upload(
    request: Request,
    engine: EngineDep,
    _slot: ConnectionSlot,
    settings: SettingsDep,
    file: Annotated[
        list[UploadFile], File(min_length=1, description="report files (gzip allowed)")
    ],
    form: Annotated[UploadForm, Form()],
) -> JSONResponse:
    """Store report files from a CI job and queue them for ingestion (202).

    A repeat (same idempotency key, or same files and run metadata) answers 200 with
    `duplicate: true`; a repeat of a failed upload puts it back in the queue
    (`requeued: true`). The raw files are committed before the answer.
    """
    files = _read_files(file, settings.max_upload_bytes)
    # Hashed (inflating gzips) before the transaction, so no connection idles meanwhile.
    digests = [content_digest(f.data, max_bytes=settings.max_report_bytes) for f in files]
    # Committed when the block ends, before the answer: a 202 means stored.
    try:
        with transaction(engine) as conn:
            grant = _grant(request, conn, "upload")
            receipt = insert_upload(
                conn,
                grant.project,
                files,
                form.run_metadata(),
                idempotency_key=form.idempotency_key or None,
                max_report_bytes=settings.max_report_bytes,
                digests=digests,
            )
    finally:
        record_noted_auth_failure(request)
    return _answer(receipt)


def _own_upload(
    conn: Connection, grant: TokenGrant, upload_id: int, settings: Settings
) -> UploadStatus:
    # The workers' own lease: a claim is "processing" exactly as long as it cannot be taken over.
    doc = get_upload(conn, upload_id, lease_s=settings.worker_lease_s)
    if doc is None:
        raise ApiError(404, "upload-not-found", f"no upload {upload_id}")
    if doc.project_id != grant.project.id:
        raise ApiError(403, "token-scope", "this token belongs to another project")
    return doc


@router.get("/uploads/{upload_id}", **answers(UploadDocument, 401, 403, 404, 422, 429))
def read_upload(
    upload_id: int, request: Request, conn: ConnDep, settings: SettingsDep
) -> UploadDocument:
    """Status of an upload: queued, processing, done (with counts) or failed (with the error).

    Any token of the upload's project may read it.
    """
    grant = grant_of(request, conn)
    if grant is None:
        raise ApiError(401, "token-required", "a token is required")
    status = _own_upload(conn, grant, upload_id, settings)
    return UploadDocument.model_validate(status, from_attributes=True)


@router.post("/uploads/{upload_id}/retry", **answers(Requeued, 401, 403, 404, 409, 422, 429))
def retry_upload(
    upload_id: int, request: Request, conn: ConnDep, settings: SettingsDep
) -> Requeued:
    """Put a failed upload back in the queue (an upload or admin token of its project).

    Its attempts start again from zero; 409 when the upload is not failed.
    """
    doc = _own_upload(conn, _grant(request, conn, "upload"), upload_id, settings)
    if not requeue_upload(conn, upload_id):
        raise ApiError(409, "upload-not-failed", f"upload {upload_id} is {doc.status}, not failed")
    return Requeued(
        id=upload_id, status="queued", url=f"/api/v1/uploads/{upload_id}", requeued=True
    )
