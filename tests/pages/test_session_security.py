"""The sign-in session, CSRF and security headers over real HTTP.

The cookie never holds the token; a forged, tampered or expired cookie is refused; the API's
bearer auth does not read cookies; the sign-in and sign-out forms refuse a POST without their
CSRF token; every page sends CSP, frame, sniffing and referrer headers.
"""

from __future__ import annotations

import time
from types import SimpleNamespace
from urllib.parse import quote

import httpx
import pytest
from fastapi import Request, Response
from sqlalchemy import Engine

from app.db.server_secret import server_secret
from app.http.session import (
    CSRF_COOKIE,
    SESSION_COOKIE,
    session_token_id,
    session_value,
    set_csrf_cookie,
    start_session,
)
from app.project_records import Project, TokenGrant
from tests.conftest import LiveServer, make_project
from tests.pages.conftest import AUGMIX_A, Site, session_cookies, sign_in_form


def _secret(engine: Engine) -> bytes:
    with engine.begin() as conn:
        return server_secret(conn)


def _status(site: Site, cookies: dict[str, str]) -> httpx.Response:
    return httpx.get(f"{site.url}/p/{site.private.slug}", cookies=cookies, timeout=60)


def _token_id(cookies: dict[str, str], engine: Engine) -> int:
    token_id = session_token_id(_secret(engine), cookies[SESSION_COOKIE])
    assert token_id is not None
    return token_id


def test_session_cookie_opens_the_private_project(site: Site) -> None:
    cookies = session_cookies(site.url, site.private.read_token)
    assert _status(site, cookies).status_code == 200
    assert site.private.read_token not in "".join(cookies.values())


def test_expired_session_is_refused(site: Site, engine: Engine) -> None:
    cookies = session_cookies(site.url, site.private.read_token)
    token_id = _token_id(cookies, engine)
    long_ago = time.time() - 30 * 86400
    expired = {SESSION_COOKIE: session_value(_secret(engine), token_id, now=long_ago)}
    response = _status(site, expired)
    assert response.status_code == 303
    assert response.headers["location"].startswith("/signin?")


def test_tampered_session_is_refused(site: Site, engine: Engine) -> None:
    cookies = session_cookies(site.url, site.private.read_token)
    token_id, rest = cookies[SESSION_COOKIE].split(".", 1)
    # Another token's id with this token's signature, and a session signed with another key.
    other = {SESSION_COOKIE: f"{int(token_id) + 1}.{rest}"}
    assert _status(site, other).status_code == 303
    wrong_key = {SESSION_COOKIE: session_value(b"k" * 32, int(token_id))}
    assert _status(site, wrong_key).status_code == 303


def test_the_api_does_not_take_the_session_cookie(site: Site) -> None:
    cookies = session_cookies(site.url, site.private.read_token)
    url = f"{site.url}/api/v1/projects/{site.private.slug}/jobs"
    assert httpx.get(url, cookies=cookies).status_code == 401
    bearer = {"Authorization": f"Bearer {site.private.read_token}"}
    assert httpx.get(url, headers=bearer).status_code == 200


def test_sign_in_without_or_with_a_foreign_csrf_token_is_refused(site: Site) -> None:
    data = {"token": site.private.read_token, "next": ""}
    bare = httpx.post(f"{site.url}/signin", data=data)
    assert bare.status_code == 403
    assert SESSION_COOKIE not in bare.headers.get("set-cookie", "")
    # A token from another browser's form does not match this browser's nonce cookie.
    with httpx.Client(base_url=site.url) as attacker:
        stolen = sign_in_form(attacker)
    with httpx.Client(base_url=site.url) as victim:
        sign_in_form(victim)
        forged = victim.post("/signin", data={**data, **stolen})
    assert forged.status_code == 403
    assert SESSION_COOKIE not in forged.headers.get("set-cookie", "")


def test_sign_out_needs_its_csrf_token(site: Site) -> None:
    with httpx.Client(base_url=site.url) as client:
        fields = sign_in_form(client)
        client.post("/signin", data={**fields, "token": site.private.read_token})
        assert client.cookies.get(SESSION_COOKIE)
        refused = client.post("/signout", data={})
        assert refused.status_code == 403
        assert client.get(f"/p/{site.private.slug}").status_code == 200  # still signed in
        # The page's own sign-out form carries the token.
        signed_out = client.post("/signout", data={"csrf": fields["csrf"]})
        assert signed_out.status_code == 303
        assert f'{SESSION_COOKIE}=""' in signed_out.headers["set-cookie"]


def test_revoking_the_token_ends_its_sessions_at_once(
    live_server: LiveServer, engine: Engine
) -> None:
    project = make_project(engine)
    cookies = session_cookies(live_server.url, project.read_token)
    page = f"{live_server.url}/p/{project.slug}"
    assert httpx.get(page, cookies=cookies).status_code == 200
    token_id = session_token_id(_secret(engine), cookies[SESSION_COOKIE])
    admin = {"Authorization": f"Bearer {project.admin_token}"}
    revoked = httpx.delete(
        f"{live_server.url}/api/v1/projects/{project.slug}/tokens/{token_id}", headers=admin
    )
    assert revoked.status_code == 200, revoked.text
    assert httpx.get(page, cookies=cookies).status_code == 303


PAGES = (
    "/projects",
    "/signin",
    "/p/{slug}",
    "/p/{slug}/time",
    "/p/{slug}/files/tests/test_transforms.py",
    "/p/{slug}/test?nodeid=" + quote(AUGMIX_A),
    "/p/{slug}/recommendations",
    "/p/{slug}/reductions",
    "/p/{slug}/flaky",
    "/p/{slug}/test?nodeid=nope",  # an error page
    "/api/v1/projects/{slug}/jobs",
)


@pytest.mark.parametrize("path", PAGES)
def test_security_headers_on_every_page(site: Site, path: str) -> None:
    response = httpx.get(site.url + path.format(slug=site.public.slug), timeout=60)
    assert response.status_code in (200, 404)
    policy = response.headers["content-security-policy"]
    assert "script-src 'self';" in policy  # no inline script, no eval
    assert "frame-ancestors 'none'" in policy
    assert "'unsafe-inline'" not in policy.split("script-src", 1)[1].split(";", 1)[0]
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "same-origin"


def test_pages_have_no_inline_script(site: Site) -> None:
    import lxml.html  # type: ignore[import-untyped]

    for path in PAGES[:8]:
        doc = lxml.html.fromstring(
            httpx.get(site.url + path.format(slug=site.public.slug), timeout=60).text
        )
        for script in doc.cssselect("script"):
            assert script.get("src") or script.get("type") == "application/json", path


def test_cookies_are_secure_over_https() -> None:
    app = SimpleNamespace(state=SimpleNamespace(session_secret=b"k" * 32))
    scope = {
        "type": "http",
        "scheme": "https",
        "app": app,
        "headers": [(b"host", b"laptime.example")],
        "path": "/",
        "query_string": b"",
    }
    grant = TokenGrant(project=Project(1, "p", "p", False, None, None), scope="read", token_id=7)
    response = Response()
    start_session(Request(scope), response, grant)
    set_csrf_cookie(Request(scope), response, "n" * 24)
    cookies = response.headers.getlist("set-cookie")
    assert [c.split("=", 1)[0] for c in cookies] == [SESSION_COOKIE, CSRF_COOKIE]
    assert all("; secure" in c.lower() and "httponly" in c.lower() for c in cookies)
    plain = Response()
    start_session(Request({**scope, "scheme": "http"}), plain, grant)
    assert "secure" not in plain.headers["set-cookie"].lower()
