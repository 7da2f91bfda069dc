"""The OpenAPI document is a contract: it validates as OpenAPI 3.1, its operation ids
are unique, and a Python client generated from it (openapi-python-client, into a temporary
directory) uploads a report, polls it until ingested and reads a rollup of it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from tests.conftest import LiveServer, ProjectFixture
from tests.factories import junit_total_seconds, junit_xml

PACKAGE = "laptime_api_client"
GENERATE_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def document(live_server: LiveServer) -> dict[str, Any]:
    answer = httpx.get(f"{live_server.url}/openapi.json", timeout=30)
    assert answer.status_code == 200
    doc: dict[str, Any] = answer.json()
    return doc


def operations(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [op for ops in document["paths"].values() for op in ops.values()]


def test_schema_validates_as_openapi_3_1(document: dict[str, Any]) -> None:
    assert document["openapi"].startswith("3.1.")
    validate(document, cls=OpenAPIV31SpecValidator)  # raises on any violation


def test_every_operation_declares_its_answers(document: dict[str, Any]) -> None:
    ids = [op["operationId"] for op in operations(document)]
    assert len(ids) == len(set(ids)) >= 20, sorted(ids)
    untyped = []
    for op in operations(document):
        for status, answer in op["responses"].items():
            schema = answer.get("content", {}).get("application/json", {}).get("schema")
            if not schema or schema == {}:
                untyped.append(f"{op['operationId']} {status}")
    assert untyped == []
    # Every error status answers the one error body (422: or the field list).
    schemas = document["components"]["schemas"]
    assert set(schemas["ErrorBody"]["required"]) == {"code", "detail"}
    assert schemas["InvalidFieldBody"]["properties"]["detail"]["type"] == "array"


@pytest.fixture(scope="module")
def generated(
    document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ModuleType]:
    """The generated client package, importable for this module's tests."""
    out = tmp_path_factory.mktemp("generated")
    (out / "openapi.json").write_text(json.dumps(document))
    (out / "config.yaml").write_text(f"package_name_override: {PACKAGE}\n")
    bin_dir = Path(sys.executable).parent
    # The generator formats its output with ruff (installed with it, in this venv's bin).
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        [
            str(bin_dir / "openapi-python-client"),
            "generate",
            "--path",
            str(out / "openapi.json"),
            "--config",
            str(out / "config.yaml"),
            "--meta",
            "none",
            "--output-path",
            str(out / PACKAGE),
            "--fail-on-warning",
        ],
        capture_output=True,
        text=True,
        timeout=GENERATE_TIMEOUT_S,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(out))
    try:
        import laptime_api_client  # type: ignore[import-not-found]

        yield laptime_api_client
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def test_generated_client_uploads_polls_and_reads_a_rollup(
    generated: ModuleType, live_server: LiveServer, project: ProjectFixture
) -> None:
    from laptime_api_client import AuthenticatedClient  # type: ignore[import-not-found]
    from laptime_api_client.api.projects import rollups  # type: ignore[import-not-found]
    from laptime_api_client.api.uploads import (  # type: ignore[import-not-found]
        create_upload,
        read_upload,
    )
    from laptime_api_client.models import (  # type: ignore[import-not-found]
        BodyCreateUpload,
        ErrorBody,
        Rollup,
        UploadDocument,
        UploadReceipt,
    )
    from laptime_api_client.types import File  # type: ignore[import-not-found]

    report = junit_xml(9, files=3, seed=19)
    uploader = AuthenticatedClient(base_url=live_server.url, token=project.upload_token)
    reader = AuthenticatedClient(base_url=live_server.url, token=project.read_token)
    body = BodyCreateUpload(
        file=[File(payload=io.BytesIO(report), file_name="r.xml", mime_type="application/xml")],
        job="generated",
        label=["os=linux"],
    )
    sent = create_upload.sync_detailed(client=uploader, body=body)
    assert sent.status_code == 202, sent.content
    receipt = sent.parsed
    assert isinstance(receipt, UploadReceipt)
    assert (receipt.duplicate, receipt.url) == (False, f"/api/v1/uploads/{receipt.id}")

    deadline = time.monotonic() + 60
    status = read_upload.sync(upload_id=receipt.id, client=reader)
    while isinstance(status, UploadDocument) and status.status in ("queued", "processing"):
        assert time.monotonic() < deadline, f"upload {receipt.id} still {status.status}"
        time.sleep(0.1)  # polling a queue, not timing anything
        status = read_upload.sync(upload_id=receipt.id, client=reader)
    assert isinstance(status, UploadDocument), status
    assert status.status == "done", status.error_detail
    assert status.counts is not None
    assert status.counts["results"] == 9
    assert status.metadata.job == "generated"
    assert status.metadata.labels is not None
    assert status.metadata.labels.additional_properties == {"os": "linux"}

    rollup = rollups.sync(slug=project.slug, client=reader, by="file", days=30)
    assert isinstance(rollup, Rollup), rollup
    assert rollup.by == "file"
    assert len(rollup.rows) == 3
    assert sum(row.runs for row in rollup.rows) == 9
    assert rollup.grand_total_s == pytest.approx(junit_total_seconds(report))

    # Errors parse into the error body too.
    missing = read_upload.sync(upload_id=receipt.id + 10_000, client=reader)
    assert isinstance(missing, ErrorBody)
    assert missing.code == "upload-not-found"
