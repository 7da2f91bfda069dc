"""The change page in a real headless Chromium: its figure drawn under the strict policy, the
step's dashed line among its shapes, nothing refused or failed."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.changes_history import upload_step_history
from tests.conftest import LiveServer, make_project
from tests.pages.conftest import watch

pytestmark = pytest.mark.browser


def test_the_change_page_draws_the_series_and_its_step(
    browser: object, live_server: LiveServer, engine: object, tmp_path: Path
) -> None:
    project = make_project(engine)  # type: ignore[arg-type]
    upload_step_history(live_server, project)
    changes = httpx.get(
        f"{live_server.url}/api/v1/projects/{project.slug}/changes",
        params={"kind": "test"},
        headers={"Authorization": f"Bearer {project.read_token}"},
    ).json()["changes"]
    (change,) = changes
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # type: ignore[attr-defined]
    try:
        watched = watch(context, live_server.url)
        page = watched.page
        path = f"/p/{project.slug}/changes/{change['id']}"
        page.goto(f"{live_server.url}/signin?next={path}")  # type: ignore[attr-defined]
        page.fill('input[name="token"]', project.read_token)  # type: ignore[attr-defined]
        page.click('form.stack button[type="submit"]')  # type: ignore[attr-defined]
        page.wait_for_url(f"**{path}")  # type: ignore[attr-defined]
        page.wait_for_selector("#fig-step .main-svg")  # type: ignore[attr-defined]
        # Two scatter traces (before, after) of points, and the shapes: two spread bands, two
        # medians and the step's dashed line.
        assert page.locator("#fig-step .scatterlayer .trace").count() == 2  # type: ignore[attr-defined]
        dashed = page.locator("#fig-step .shapelayer path[style*='stroke-dasharray']")  # type: ignore[attr-defined]
        assert dashed.count() == 1
        page.screenshot(path=str(tmp_path / "change.png"), full_page=True)  # type: ignore[attr-defined]
        assert watched.problems == []
    finally:
        context.close()
