"""Upload rows: the raw reports, committed before the API answers, and their status."""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, text

from app.project_records import Project
from ingest.attempts import spent_sql
from ingest.model import ReportParseError
from ingest.parsers.compression import gunzip_chunks, is_gzip


@dataclass(frozen=True)
class IncomingFile:
    """One report file as received."""

    filename: str
    data: bytes


@dataclass(frozen=True)
class UploadMetadata:
    """The run an upload describes, as the upload form gave it; stored on the upload row as
    a JSON document (`document`), which the worker reads back (ingest/upload_ingest.py)."""

    job: str = "default"
    commit: str | None = None
    branch: str | None = None
    pipeline: str | None = None
    machine: str | None = None
    pull_request: str | None = None
    runner_os: str | None = None
    plan_id: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    started_at: datetime | None = None
    wall_s: float | None = None
    peak_rss_mib: float | None = None
    job_wall_s: float | None = None
    backfill: bool = False
    runner: str | None = None
    first_parents: tuple[str, ...] = ()
    merged_requests: tuple[str, ...] = ()  # `sha:number`

    @classmethod
    def of(cls, document: Mapping[str, Any]) -> UploadMetadata:
        """From a document of the stored form (keys left out take their defaults)."""
        started = document.get("started_at")
        return cls(
            job=str(document.get("job") or "default"),
            commit=document.get("commit"),
            branch=document.get("branch"),
            pipeline=document.get("pipeline"),
            machine=document.get("machine"),
            pull_request=document.get("pull_request"),
            runner_os=document.get("runner_os"),
            plan_id=document.get("plan_id"),
            labels=dict(document.get("labels") or {}),
            started_at=datetime.fromisoformat(started) if isinstance(started, str) else started,
            wall_s=document.get("wall_s"),
            peak_rss_mib=document.get("peak_rss_mib"),
            job_wall_s=document.get("job_wall_s"),
            backfill=bool(document.get("backfill")),
            runner=document.get("runner"),
            first_parents=tuple(document.get("first_parents") or ()),
            merged_requests=tuple(document.get("merged_requests") or ()),
        )

    def document(self) -> dict[str, Any]:
        """The stored JSON document (its keys and their order are what stored uploads hold;
        `merged_requests` only when there are some, so answers without them keep their bytes)."""
        document = {
            "commit": self.commit,
            "branch": self.branch,
            "pipeline": self.pipeline,
            "job": self.job or "default",
            "machine": self.machine,
            "pull_request": self.pull_request,
            "runner_os": self.runner_os,
            "plan_id": self.plan_id,
            "labels": dict(self.labels),
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "wall_s": self.wall_s,
            "peak_rss_mib": self.peak_rss_mib,
            "job_wall_s": self.job_wall_s,
            "backfill": self.backfill,
            "runner": self.runner,
            "first_parents": list(self.first_parents),
        }
        if self.merged_requests:
            document["merged_requests"] = list(self.merged_requests)
        return document


@dataclass(frozen=True)
class UploadReceipt:
    """The answer to an upload: its id, whether it repeated an earlier one, and whether that
    repeat put a failed upload back in the queue."""

    id: int
    status: str
    duplicate: bool
    requeued: bool = False


def content_digest(data: bytes, *, max_bytes: int) -> bytes:
    """SHA-256 of the report's decompressed content, so gzip settings do not hide a repeat.

    A member that inflates past max_bytes (or is not valid gzip) is hashed as sent; the worker
    then rejects it with a precise error instead of the API holding a bomb in memory.
    """
    if not is_gzip(data):
        return hashlib.sha256(data).digest()
    digest = hashlib.sha256()
    try:
        for chunk in gunzip_chunks(data, max_bytes, None):
            digest.update(chunk)
    except ReportParseError:
        return hashlib.sha256(data).digest()
    return digest.digest()


def repeat_key(digests: list[bytes], metadata: dict[str, Any]) -> bytes:
    """What makes two uploads one: the reports' content and the run they describe.

    Stored in `upload.content_hash`. Pipeline, commit, branch, machine and labels are part of
    it, so matrix cells sending byte-identical reports under one job name stay two uploads,
    while a retry of the same upload (same files, same metadata) is one.
    """
    identity = {
        key: metadata.get(key) for key in ("job", "pipeline", "commit", "branch", "machine")
    }
    identity["labels"] = sorted((metadata.get("labels") or {}).items())
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode())
    for file_digest in sorted(digests):
        digest.update(file_digest)
    return digest.digest()


def insert_upload(
    conn: Connection,
    project: Project,
    files: list[IncomingFile],
    run: UploadMetadata,
    *,
    idempotency_key: str | None,
    max_report_bytes: int,
    digests: list[bytes] | None = None,
) -> UploadReceipt:
    """Store the raw files and queue them, or return the earlier upload they repeat.

    A repeat of a failed upload puts it back in the queue (the fix may be on the server).
    `digests` are the files' content_digest when the caller computed them already (the API
    does, before it opens its transaction: inflating a report can take seconds).
    """
    metadata = run.document()
    job = str(metadata.get("job") or "")
    if digests is None:
        digests = [content_digest(f.data, max_bytes=max_report_bytes) for f in files]
    content_hash = repeat_key(digests, metadata)
    existing = _find_existing(conn, project.id, idempotency_key, job, content_hash)
    if existing is None:
        row = conn.execute(
            text(
                """
                INSERT INTO upload (project_id, metadata, job, content_hash, idempotency_key,
                    size_bytes)
                VALUES (:p, CAST(:m AS jsonb), :j, :h, :k, :n)
                ON CONFLICT DO NOTHING RETURNING id
                """
            ),
            {
                "p": project.id,
                "m": json.dumps(metadata),
                "j": job,
                "h": content_hash,
                "k": idempotency_key,
                "n": sum(len(f.data) for f in files),
            },
        ).first()
        if row is not None:
            upload_id = int(row[0])
            _insert_files(conn, upload_id, files)
            _notify(conn, upload_id)
            return UploadReceipt(id=upload_id, status="queued", duplicate=False)
        # A concurrent identical upload won the race (we waited for its commit); answer with it.
        existing = _find_existing(conn, project.id, idempotency_key, job, content_hash)
        assert existing is not None
    if existing.status == "failed":
        if requeue_upload(conn, existing.id):
            return UploadReceipt(id=existing.id, status="queued", duplicate=True, requeued=True)
        # A concurrent repeat re-queued it first (we waited for its commit): its status now.
        existing = _find_existing(conn, project.id, idempotency_key, job, content_hash)
        assert existing is not None
    return existing


def requeue_upload(conn: Connection, upload_id: int) -> bool:
    """Put a failed upload back in the queue as if new; False when it is not failed.

    Its attempt rows go: the worker counts attempts over `upload_attempt`, so a re-queued
    upload gets the full `max_attempts` again. The error it replaces is not kept.
    """
    row = conn.execute(
        text(
            """
            UPDATE upload SET status = 'queued', attempts = 0, error_code = NULL,
                error_detail = NULL, warnings = '[]'::jsonb, counts = '{}'::jsonb,
                finished_at = NULL
            WHERE id = :u AND status = 'failed' RETURNING id
            """
        ),
        {"u": upload_id},
    ).first()
    if row is None:
        return False
    conn.execute(text("DELETE FROM upload_attempt WHERE upload_id = :u"), {"u": upload_id})
    _notify(conn, upload_id)
    return True


def _insert_files(conn: Connection, upload_id: int, files: list[IncomingFile]) -> None:
    conn.execute(
        text(
            "INSERT INTO upload_file (upload_id, position, filename, raw_gzip, size_bytes) "
            "VALUES (:u, :i, :f, :r, :n)"
        ),
        [
            {
                "u": upload_id,
                "i": i,
                "f": f.filename,
                "r": f.data if is_gzip(f.data) else gzip.compress(f.data, 1),
                "n": len(f.data),
            }
            for i, f in enumerate(files)
        ],
    )


def _notify(conn: Connection, upload_id: int) -> None:
    # Delivered at commit, so a worker never wakes for a row it cannot see yet.
    conn.execute(text("SELECT pg_notify('laptime_uploads', :u)"), {"u": str(upload_id)})


def _find_existing(
    conn: Connection, project_id: int, key: str | None, job: str, content_hash: bytes
) -> UploadReceipt | None:
    row = conn.execute(
        text(
            """
            SELECT id, status FROM upload
            WHERE project_id = :p AND ((CAST(:k AS text) IS NOT NULL AND idempotency_key = :k)
                OR (job = :j AND content_hash = :h))
            ORDER BY id LIMIT 1
            """
        ),
        {"p": project_id, "k": key, "j": job, "h": content_hash},
    ).first()
    return UploadReceipt(id=int(row[0]), status=row[1], duplicate=True) if row else None


@dataclass(frozen=True)
class StoredFile:
    """One report file of an upload."""

    filename: str
    size_bytes: int


@dataclass(frozen=True)
class UploadLine:
    """One upload as a project's list shows it; times in ISO 8601."""

    id: int
    status: str
    job: str | None
    error_code: str | None
    error_detail: str | None
    created_at: str
    finished_at: str | None
    counts: Mapping[str, int] | None


@dataclass(frozen=True)
class UploadStatus(UploadLine):
    """The status of one upload: its line, and what the worker made of it."""

    project_id: int = 0
    warnings: tuple[str, ...] = ()
    attempts: int = 0
    run_id: int | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    files: tuple[StoredFile, ...] = ()


def _iso(stamp: datetime | None) -> str | None:
    return stamp.isoformat() if stamp is not None else None


def get_upload(conn: Connection, upload_id: int, *, lease_s: float) -> UploadStatus | None:
    """The status document of one upload (what GET /api/v1/uploads/{id} answers).

    "processing" only while a worker whose heartbeat is younger than `lease_s` holds it: a
    claim whose worker died reads "queued" (with its attempts) until another takes it over.
    """
    row = (
        conn.execute(
            text(
                """
            SELECT u.id, u.project_id, u.status, u.counts, u.warnings, u.error_code,
                u.error_detail, u.created_at, u.finished_at, u.run_id, u.metadata,
                CASE WHEN u.status = 'queued' THEN (SELECT count(*) FROM upload_attempt a
                    WHERE a.upload_id = u.id AND """
                + spent_sql("a")
                + """) ELSE u.attempts END AS attempts,
                EXISTS (SELECT 1 FROM worker_heartbeat h WHERE h.upload_id = u.id
                    AND h.seen_at > clock_timestamp() - make_interval(secs => :lease))
                    AS claimed,
                (SELECT json_agg(json_build_object('filename', f.filename,
                    'size_bytes', f.size_bytes) ORDER BY f.position)
                 FROM upload_file f WHERE f.upload_id = u.id) AS files
            FROM upload u WHERE u.id = :u
            """
            ),
            {"u": upload_id, "lease": lease_s},
        )
        .mappings()
        .first()
    )
    if row is None:
        return None
    status, attempts = row["status"], row["attempts"]
    if status == "queued" and row["claimed"]:
        status = "processing"
        attempts += 1  # the claim under way (its worker is connected: not spent yet)
    metadata = row["metadata"]
    return UploadStatus(
        id=row["id"],
        status=status,
        job=metadata.get("job") if isinstance(metadata, dict) else None,
        error_code=row["error_code"],
        error_detail=row["error_detail"],
        created_at=row["created_at"].isoformat(),
        finished_at=_iso(row["finished_at"]),
        counts=row["counts"],
        project_id=row["project_id"],
        warnings=tuple(row["warnings"] or ()),
        attempts=attempts,
        run_id=row["run_id"],
        metadata=metadata,
        files=tuple(StoredFile(f["filename"], f["size_bytes"]) for f in row["files"] or ()),
    )


def recent_uploads(conn: Connection, project_id: int, *, limit: int = 50) -> list[UploadLine]:
    """The latest uploads of a project, newest first."""
    rows = conn.execute(
        text(
            """
            SELECT id, status, job, error_code, error_detail, created_at, finished_at, counts
            FROM upload WHERE project_id = :p ORDER BY id DESC LIMIT :n
            """
        ),
        {"p": project_id, "n": limit},
    ).mappings()
    return [
        UploadLine(
            id=r["id"],
            status=r["status"],
            job=r["job"],
            error_code=r["error_code"],
            error_detail=r["error_detail"],
            created_at=r["created_at"].isoformat(),
            finished_at=_iso(r["finished_at"]),
            counts=r["counts"],
        )
        for r in rows
    ]
