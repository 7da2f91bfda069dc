"""/docs: Swagger UI served from the installed swagger-ui-bundle package, never from a CDN.

The page runs no inline script (its start-up is init.js here), so the dashboard's strict
Content-Security-Policy covers it too. ReDoc is not served: it would need a second bundle.
"""

from __future__ import annotations

from pathlib import Path

import swagger_ui_bundle
from fastapi import FastAPI
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles

HERE = Path(__file__).parent
BUNDLE_DIR = Path(str(swagger_ui_bundle.swagger_ui_path))
# The bundle's version is in its directory name (swagger-ui-5.31.0): a new version is a new
# URL, so the files may be cached for good.
ASSETS_URL = f"/docs/assets/{BUNDLE_DIR.name}"
INIT_URL = "/docs/init.js"

PAGE = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>laptime API</title>
<link rel="stylesheet" href="{ASSETS_URL}/swagger-ui.css">
<link rel="icon" type="image/png" href="{ASSETS_URL}/favicon-32x32.png">
</head>
<body>
<div id="swagger-ui"></div>
<script src="{ASSETS_URL}/swagger-ui-bundle.js"></script>
<script src="{INIT_URL}"></script>
</body>
</html>
"""


def mount_docs(app: FastAPI) -> None:
    """Serve /docs and its assets; the app must be built with docs_url=None."""
    app.mount(ASSETS_URL, StaticFiles(directory=BUNDLE_DIR), name="swagger-ui")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return HTMLResponse(PAGE)

    @app.get(INIT_URL, include_in_schema=False)
    def docs_init() -> FileResponse:
        return FileResponse(HERE / "init.js", media_type="text/javascript")
