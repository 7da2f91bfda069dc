"""plotly.js from the installed plotly package, our CSS and script: versioned URLs, cached
for a year, gzipped on request."""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
from functools import cache
from pathlib import Path

import plotly
from fastapi import APIRouter, Request
from fastapi.responses import Response

HERE = Path(__file__).parent
PLOTLY_JS = Path(str(importlib.resources.files("plotly") / "package_data" / "plotly.min.js"))
CSS_FILE = HERE / "static" / "laptime.css"
JS_FILE = HERE / "static" / "laptime.js"
LONG_CACHE = "public, max-age=31536000, immutable"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:10]


# Versioned names: the content behind a URL never changes, so browsers may cache it forever.
STATIC_FILES: dict[str, tuple[Path, str]] = {
    f"plotly-{plotly.__version__}.min.js": (PLOTLY_JS, "text/javascript"),
    f"laptime-{_digest(CSS_FILE)}.css": (CSS_FILE, "text/css"),
    f"laptime-{_digest(JS_FILE)}.js": (JS_FILE, "text/javascript"),
}
PLOTLY_URL, CSS_URL, JS_URL = (f"/static/{name}" for name in STATIC_FILES)

router = APIRouter(include_in_schema=False)


@cache
def _gzipped(name: str) -> bytes:
    return gzip.compress(STATIC_FILES[name][0].read_bytes(), compresslevel=6)


@router.get("/static/{name}")
def static_file(request: Request, name: str) -> Response:
    """A static file by its versioned name."""
    if name not in STATIC_FILES:
        return Response("no such static file", status_code=404, media_type="text/plain")
    path, media_type = STATIC_FILES[name]
    headers = {"Cache-Control": LONG_CACHE, "Vary": "Accept-Encoding"}
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(_gzipped(name), media_type=media_type, headers=headers)
    return Response(path.read_bytes(), media_type=media_type, headers=headers)
