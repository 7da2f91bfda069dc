"""The dashboard's sign-in session and CSRF tokens, signed with the server's secret.

The session cookie never holds the API token: it holds the token's id and an expiry, signed
(HMAC-SHA256) with a secret made once and kept in the database. Every request looks the token
up by id, so revoking or expiring the token ends its sessions at once. Forms that change the
sign-in state carry a CSRF token: an HMAC of a random per-browser value kept in a cookie
(signed double submit), so a cross-site form cannot produce it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from fastapi import Request
from fastapi.responses import Response
from sqlalchemy import Connection, Engine

from app.db.projects import grant_of_token_id
from app.db.server_secret import server_secret
from app.project_records import TokenGrant

SESSION_COOKIE = "laptime_session"
CSRF_COOKIE = "laptime_csrf"
CSRF_FIELD = "csrf"
SESSION_MAX_AGE_S = 14 * 86400


def secret_of(request: Request) -> bytes:
    """The signing secret, read from the database once per process."""
    state = request.app.state
    secret: bytes | None = getattr(state, "session_secret", None)
    if secret is None:
        engine: Engine = state.engine
        with engine.begin() as conn:
            secret = server_secret(conn)
        state.session_secret = secret
    return secret


def _sign(secret: bytes, *parts: str) -> str:
    digest = hmac.new(secret, "\x1f".join(parts).encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def session_value(secret: bytes, token_id: int, *, now: float | None = None) -> str:
    """The cookie value of a new session of token `token_id`: "id.expiry.signature"."""
    expires = int(now if now is not None else time.time()) + SESSION_MAX_AGE_S
    return f"{token_id}.{expires}.{_sign(secret, 'session', str(token_id), str(expires))}"


def session_token_id(secret: bytes, value: str, *, now: float | None = None) -> int | None:
    """The token id a session cookie names, or None when forged, malformed or expired."""
    token_id, _, rest = value.partition(".")
    expires, _, signature = rest.partition(".")
    if not (token_id.isdigit() and expires.isdigit() and len(value) < 200):
        return None
    expected = _sign(secret, "session", token_id, expires)
    if not hmac.compare_digest(expected, signature):
        return None
    if int(expires) <= (now if now is not None else time.time()):
        return None
    return int(token_id)


@dataclass(frozen=True)
class Visitor:
    """Who is looking at a page: the session's grant, and whether a cookie went stale."""

    grant: TokenGrant | None
    stale: bool


def visitor_of(request: Request, conn: Connection) -> Visitor:
    """The signed-in grant from the session cookie (never from a bearer header)."""
    value = request.cookies.get(SESSION_COOKIE)
    if not value:
        return Visitor(None, stale=False)
    token_id = session_token_id(secret_of(request), value)
    grant = grant_of_token_id(conn, token_id) if token_id is not None else None
    return Visitor(grant, stale=grant is None)


def start_session(request: Request, response: Response, grant: TokenGrant) -> None:
    """Set the session cookie of `grant`'s token on `response`."""
    response.set_cookie(
        SESSION_COOKIE,
        session_value(secret_of(request), grant.token_id),
        max_age=SESSION_MAX_AGE_S,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def end_session(response: Response) -> None:
    """Clear the session cookie."""
    response.delete_cookie(SESSION_COOKIE, path="/")


def csrf_nonce(request: Request) -> tuple[str, bool]:
    """(this browser's CSRF nonce, whether it is new and must be set as a cookie)."""
    nonce = request.cookies.get(CSRF_COOKIE, "")
    if 16 <= len(nonce) <= 64 and nonce.isascii():
        return nonce, False
    return secrets.token_urlsafe(24), True


def csrf_token(request: Request, nonce: str) -> str:
    """The form field value that proves a form came from our page."""
    return _sign(secret_of(request), "csrf", nonce)


def set_csrf_cookie(request: Request, response: Response, nonce: str) -> None:
    """Keep the browser's CSRF nonce (for as long as a session lasts)."""
    response.set_cookie(
        CSRF_COOKIE,
        nonce,
        max_age=SESSION_MAX_AGE_S,
        path="/",
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
    )


def csrf_ok(request: Request, submitted: str) -> bool:
    """True when `submitted` is the CSRF token of this browser's nonce cookie."""
    nonce = request.cookies.get(CSRF_COOKIE, "")
    if not nonce or not submitted:
        return False
    return hmac.compare_digest(csrf_token(request, nonce), submitted)
