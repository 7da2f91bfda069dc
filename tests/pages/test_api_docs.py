"""/docs renders every operation in Chromium with the network cut off: Swagger UI comes
from the installed bundle, under the same strict CSP as the dashboard."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import LiveServer
from tests.pages.conftest import watch


@pytest.mark.browser
def test_docs_render_every_operation_offline(browser: object, live_server: LiveServer) -> None:
    schema = httpx.get(f"{live_server.url}/openapi.json", timeout=30).json()
    operations = sorted(
        (method.upper(), path) for path, ops in schema["paths"].items() for method in ops
    )
    context = browser.new_context()  # type: ignore[attr-defined]
    try:
        watched = watch(context, live_server.url)
        page = watched.page
        answer = page.goto(f"{live_server.url}/docs")  # type: ignore[attr-defined]
        policy = answer.headers["content-security-policy"]
        page.wait_for_selector(".opblock-summary-path", timeout=30_000)  # type: ignore[attr-defined]
        rendered = page.eval_on_selector_all(  # type: ignore[attr-defined]
            ".opblock",
            """blocks => blocks.map(b => [
                b.querySelector('.opblock-summary-method').textContent.trim(),
                b.querySelector('.opblock-summary-path').getAttribute('data-path'),
            ])""",
        )
        # One operation expanded: its responses table lists the documented error statuses.
        page.click("#operations-uploads-create_upload .opblock-summary")  # type: ignore[attr-defined]
        statuses = page.locator(  # type: ignore[attr-defined]
            "#operations-uploads-create_upload .responses-table td.response-col_status"
        ).all_text_contents()
    finally:
        context.close()  # type: ignore[attr-defined]
    assert sorted((m, p) for m, p in rendered) == operations
    assert {"202", "413", "422", "503"} <= {s.strip()[:3] for s in statuses}, statuses
    assert "http" not in policy, policy
    assert "script-src 'self';" in policy, policy
    # Every request went to the app (others were aborted and recorded), with no console
    # error (a CSP violation is one) and no failed request.
    assert watched.problems == []
