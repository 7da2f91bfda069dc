"""The OpenAPI document as clients read it: FastAPI's, with form bodies made plain objects.

FastAPI writes a form model plus a file parameter as `allOf: [UploadForm]` with `file` beside
it; client generators (openapi-python-client) keep the `allOf` and drop the sibling `file`,
so a generated client could not upload. The same body as one object with every property is
the same schema, and every generator reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

REF_PREFIX = "#/components/schemas/"


def install_openapi(app: FastAPI) -> None:
    """Make `app.openapi()` answer the flattened document (built once, then cached)."""
    build: Callable[[], dict[str, Any]] = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            flatten_form_bodies(build())  # build() caches its result in app.openapi_schema
        assert app.openapi_schema is not None
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def flatten_form_bodies(document: dict[str, Any]) -> None:
    """Merge a lone `allOf` reference into the object beside it, and mark binary strings
    (`contentMediaType: application/octet-stream`) with `format: binary` as well."""
    schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})
    for schema in schemas.values():
        parts = schema.get("allOf")
        if not (isinstance(parts, list) and len(parts) == 1 and "$ref" in parts[0]):
            continue
        base = schemas[parts[0]["$ref"].removeprefix(REF_PREFIX)]
        schema.pop("allOf")
        schema["properties"] = {**base.get("properties", {}), **schema.get("properties", {})}
        required = [*base.get("required", []), *schema.get("required", [])]
        if required:
            schema["required"] = list(dict.fromkeys(required))
        for key in ("additionalProperties",):
            if key in base:
                schema.setdefault(key, base[key])
        for prop in schema["properties"].values():
            _mark_binary(prop)


def _mark_binary(prop: dict[str, Any]) -> None:
    for node in (prop, prop.get("items", {})):
        if node.get("contentMediaType") == "application/octet-stream":
            node.setdefault("format", "binary")
