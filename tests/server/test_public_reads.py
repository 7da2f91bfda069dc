"""A public project's reads are open to anyone: anonymous, or signed in to (or holding a token
of) another project. Its writes still need its own tokens (docs/dashboard.md, docs/api.md)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

import httpx
import pytest
from sqlalchemy import Engine

from tests.changes_history import upload_step_history
from tests.conftest import LiveServer, ProjectFixture, make_project
from tests.pages.conftest import session_cookies
from tests.server.test_rollup_api import junit
from tests.server.test_upload_flow import upload, wait_done

NODE_FILE = "tests/test_a.py"


@dataclass(frozen=True)
class TwoProjects:
    """A private project A (whose tokens the visitor holds) and a public project B."""

    a: ProjectFixture
    b: ProjectFixture
    queue_id: int  # B's queue of pipeline p1
    change_id: int  # a lasting step in B's default branch


@pytest.fixture(scope="module")
def two(live_server: LiveServer, engine: Engine) -> TwoProjects:
    """A and B; B holds one upload (on a machine type its catalogue knows) so every read,
    the test and file pages and the machine sizing included, has data to answer with."""
    a = make_project(engine)
    b = make_project(engine, public=True)
    response = upload(
        live_server,
        b.upload_token,
        [("r.xml", junit([("tests.test_a", "test_one", 2.0, "passed")]))],
        pipeline="p1",
        machine="ubuntu-latest",
        wall_s="10",
        peak_rss_mib="500",
    )
    assert response.status_code == 202, response.text
    assert wait_done(live_server, b.upload_token, response.json()["id"])["status"] == "done"
    # A run of the base branch, so comparing pipeline p1 with main answers from data.
    base = upload(
        live_server,
        b.upload_token,
        [("r.xml", junit([("tests.test_a", "test_one", 1.5, "passed")]))],
        pipeline="p0",
        branch="main",
        machine="ubuntu-latest",
    )
    assert base.status_code == 202, base.text
    assert wait_done(live_server, b.upload_token, base.json()["id"])["status"] == "done"
    declared = httpx.put(
        f"{live_server.url}/api/v1/projects/{b.slug}/catalogue",
        json={"name": "github"},
        headers={"Authorization": f"Bearer {b.admin_token}"},
        timeout=30,
    )
    assert declared.status_code == 200, declared.text
    # Pipeline p1's queue, so the queue reads answer from data.
    opened = httpx.post(
        f"{live_server.url}/api/v1/projects/{b.slug}/queues",
        json={"node": "1", "pipeline": "p1", "collected": [f"{NODE_FILE}::test_one"]},
        headers={"Authorization": f"Bearer {b.upload_token}"},
        timeout=30,
    )
    assert opened.status_code == 200, opened.text
    # A default-branch history with a lasting step, so a change's reads answer from data.
    upload_step_history(live_server, b)
    changes = httpx.get(
        f"{live_server.url}/api/v1/projects/{b.slug}/changes", params={"kind": "test"}, timeout=30
    ).json()["changes"]
    return TwoProjects(a, b, int(opened.json()["queue_id"]), int(changes[0]["id"]))


def page_paths(slug: str, change_id: int) -> list[str]:
    """Every project page of `slug`."""
    base = f"/p/{quote(slug)}"
    return [
        base,
        f"{base}/time",
        f"{base}/recommendations",
        f"{base}/recommendations/accuracy",
        f"{base}/reductions",
        f"{base}/flaky",
        f"{base}/files/{NODE_FILE}",
        f"{base}/test?nodeid={quote(NODE_FILE + '::test_one')}",
        f"{base}/changes",
        f"{base}/changes/{change_id}",
    ]


# GETs that want an admin token: what they list (tokens, webhooks and their deliveries) is
# never public.
ADMIN_READS = ("/tokens", "/webhooks", "/webhook-deliveries")


def api_read_paths(server: LiveServer, slug: str, queue_id: int, change_id: int) -> list[str]:
    """Every GET of the API under /projects/{slug} that a read token may call, from the
    OpenAPI document itself (a new read route is covered without touching this test)."""
    paths = httpx.get(f"{server.url}/openapi.json", timeout=30).json()["paths"]
    reads = []
    for path, operations in paths.items():
        if not path.startswith("/api/v1/projects/{slug}") or "get" not in operations:
            continue
        if "{token_id}" in path or path.endswith(ADMIN_READS):
            continue  # admin-only: token and webhook lists are never public
        query = {
            "/shards": "?total=2&index=1",
            "/compare": "?pipeline=p1&base=main",
            "/export": "?runner=go",
            "/pipeline": "?pipeline=p1",
        }.get(path[path.rindex("/") :], "")
        filled = (
            path.replace("{slug}", quote(slug))
            .replace("{queue_id}", str(queue_id))
            .replace("{change_id}", str(change_id))
        )
        reads.append(filled + query)
    return reads


def test_signed_in_elsewhere_reads_public_pages(live_server: LiveServer, two: TwoProjects) -> None:
    cookies = session_cookies(live_server.url, two.a.read_token)
    # The cookie is a real session: A's own page answers 200 with it and 303 without.
    own = httpx.get(f"{live_server.url}/p/{two.a.slug}", cookies=cookies, timeout=60)
    assert own.status_code == 200
    answers = {}
    for path in page_paths(two.b.slug, two.change_id):
        anonymous = httpx.get(f"{live_server.url}{path}", timeout=60)
        signed_in = httpx.get(f"{live_server.url}{path}", cookies=cookies, timeout=60)
        answers[path] = (anonymous.status_code, signed_in.status_code)
    assert answers == dict.fromkeys(answers, (200, 200))


@pytest.mark.parametrize("scope", ["read", "admin"])
def test_foreign_token_reads_public_api(
    live_server: LiveServer, two: TwoProjects, scope: str
) -> None:
    token = getattr(two.a, f"{scope}_token")
    answers = {}
    for path in api_read_paths(live_server, two.b.slug, two.queue_id, two.change_id):
        anonymous = httpx.get(f"{live_server.url}{path}", timeout=60)
        foreign = httpx.get(
            f"{live_server.url}{path}", headers={"Authorization": f"Bearer {token}"}, timeout=60
        )
        answers[path] = (anonymous.status_code, foreign.status_code)
    assert len(answers) >= 10, answers
    assert answers == dict.fromkeys(answers, (200, 200))


def test_public_project_writes_still_need_its_own_token(
    live_server: LiveServer, two: TwoProjects
) -> None:
    url = f"{live_server.url}/api/v1/projects/{two.b.slug}"
    headers = {"Authorization": f"Bearer {two.a.admin_token}"}
    put = httpx.put(f"{url}/catalogue", json={"name": "github"}, headers=headers, timeout=30)
    issue = httpx.post(f"{url}/tokens", json={"scope": "read"}, headers=headers, timeout=30)
    listing = httpx.get(f"{url}/tokens", headers=headers, timeout=30)
    assert (put.status_code, issue.status_code, listing.status_code) == (403, 403, 403)
    assert put.json()["code"] == "token-scope"
    # Anonymous is told to bring a token; B's own admin token may write.
    assert httpx.get(f"{url}/tokens", timeout=30).status_code == 401
    own = {"Authorization": f"Bearer {two.b.admin_token}"}
    assert httpx.get(f"{url}/tokens", headers=own, timeout=30).status_code == 200
