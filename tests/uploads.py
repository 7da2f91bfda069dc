"""Store reports through the live server's upload API and wait until the worker stored them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.conftest import LiveServer
from tests.server.test_upload_flow import upload, wait_done


def upload_all(
    server: LiveServer, token: str, uploads: Iterable[tuple[str, bytes, dict[str, Any]]]
) -> None:
    """POST each (file name, body, form fields) upload, then wait until every one is done."""
    ids = []
    for name, body, fields in uploads:
        response = upload(server, token, [(name, body)], **fields)
        assert response.status_code == 202, response.text
        ids.append(response.json()["id"])
    for upload_id in ids:
        assert wait_done(server, token, upload_id)["status"] == "done"
