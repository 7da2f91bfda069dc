"""Sign in with a read token (kept server-side: the cookie holds a signed session) and out."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Form, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from app.http.deps import ConnDep, check_token
from app.http.session import csrf_ok, end_session, start_session
from app.pages.common import SIGN_IN_REASONS, render

router = APIRouter(include_in_schema=False)

CSRF_REFUSED = "This form has expired or did not come from this site: sign in again."


def safe_next(raw: str | None) -> str | None:
    """`raw` when it is a same-site path, else None."""
    # Only same-site paths: an open redirect would let a link send a signed-in user anywhere.
    if raw and raw.startswith("/") and not raw.startswith("//") and "\\" not in raw:
        return raw
    return None


def _form(request: Request, next_url: str, message: str | None, status: int = 200) -> Response:
    return render(
        request, "signin.html", {"next": safe_next(next_url) or "", "message": message}, status
    )


@router.get("/signin", response_class=HTMLResponse)
def sign_in_form(request: Request, next: str | None = None, reason: str | None = None) -> Any:
    """The sign-in form: paste a read (or admin) token."""
    return _form(request, next or "", SIGN_IN_REASONS.get(reason or ""))


@router.post("/signin")
def sign_in(
    request: Request,
    conn: ConnDep,
    token: Annotated[str, Form(max_length=500)],
    next: Annotated[str, Form(max_length=2000)] = "",
    csrf: Annotated[str, Form(max_length=200)] = "",
) -> Response:
    """Check the token and start a signed session; back to where the visitor was."""
    if not csrf_ok(request, csrf):
        return _form(request, next, CSRF_REFUSED, 403)
    try:
        grant = check_token(request, conn, token.strip())
    except HTTPException as exc:  # 429: too many failed attempts from this address
        response = _form(request, next, str(exc.detail), exc.status_code)
        response.headers.update(exc.headers or {})
        return response
    if grant is None or not grant.allows("read"):
        message = (
            "That token is unknown, expired or revoked."
            if grant is None
            else f"A token with scope {grant.scope!r} cannot read dashboards: use a read token."
        )
        return _form(request, next, message, 401)
    target = safe_next(next) or f"/p/{quote(grant.project.slug)}"
    response = RedirectResponse(target, status_code=303)
    start_session(request, response, grant)
    return response


@router.post("/signout")
def sign_out(request: Request, csrf: Annotated[str, Form(max_length=200)] = "") -> Response:
    """Forget the session cookie."""
    if not csrf_ok(request, csrf):
        return _form(request, "", CSRF_REFUSED, 403)
    response = RedirectResponse("/projects", status_code=303)
    end_session(response)
    return response
