"""The dashboard: server-rendered pages over the same reads the REST API serves.

Every page takes the API's query parameters (`days`, `branch`, `job`, `label`, `marker`...),
so a filtered view is a URL that can be shared. A visitor without a token on a private
project is redirected (303) to the sign-in page, which starts a signed session (the cookie
never holds the token). One module per page; what they share is in `common`.
"""

from __future__ import annotations

from fastapi import FastAPI

from app.http.headers import SecurityHeaders
from app.pages import (
    accuracy,
    case_view,
    changes,
    file_view,
    flaky,
    overview,
    projects,
    recommendations,
    reductions,
    signin,
    static,
    time_view,
)
from app.pages.common import (
    PageError,
    RedirectTo,
    SignInRequired,
    error_page,
    redirect,
    redirect_to_sign_in,
)

VIEWS = (
    static,
    signin,
    projects,
    overview,
    time_view,
    file_view,
    case_view,
    recommendations,
    reductions,
    accuracy,
    flaky,
    changes,
)


def mount(app: FastAPI) -> None:
    """Add the dashboard's routes, error pages and security headers to the app."""
    for view in VIEWS:
        app.include_router(view.router)
    app.add_exception_handler(SignInRequired, redirect_to_sign_in)  # type: ignore[arg-type]
    app.add_exception_handler(PageError, error_page)  # type: ignore[arg-type]
    app.add_exception_handler(RedirectTo, redirect)  # type: ignore[arg-type]
    app.add_middleware(SecurityHeaders)
