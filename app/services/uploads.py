"""The upload operations the upload edge calls: store raw files, read and re-queue uploads.

The database layer's own operations and its transaction scope, reached here so that the
edges never import the database layer.
"""

from app.db.engine import transaction
from app.db.uploads import (
    IncomingFile,
    UploadLine,
    UploadMetadata,
    UploadReceipt,
    UploadStatus,
    content_digest,
    get_upload,
    insert_upload,
    recent_uploads,
    requeue_upload,
)

__all__ = [
    "IncomingFile",
    "UploadLine",
    "UploadMetadata",
    "UploadReceipt",
    "UploadStatus",
    "content_digest",
    "get_upload",
    "insert_upload",
    "recent_uploads",
    "requeue_upload",
    "transaction",
]
