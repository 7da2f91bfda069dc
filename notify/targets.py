"""Which addresses a webhook may name: http(s) URLs with a host, nothing else.

A webhook makes the server send requests where an admin says; file:, gopher:, ftp: and the
like would reach what HTTP cannot, so only http and https pass, without credentials in the
URL (the secret signs the body instead). Redirects are never followed by the sender.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from analysis.errors import AnswerError

SCHEMES = ("http", "https")
MAX_URL_CHARS = 2000


class WebhookUrlError(AnswerError):
    """The URL is not one a webhook may call (a 422)."""


def check_url(url: str) -> str:
    """`url` when a webhook may call it, else WebhookUrlError saying why."""
    if len(url) > MAX_URL_CHARS:
        raise WebhookUrlError(f"the URL is longer than {MAX_URL_CHARS} characters")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise WebhookUrlError("the URL holds spaces or control characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise WebhookUrlError(f"not a URL: {exc}") from exc
    if parts.scheme.lower() not in SCHEMES:
        raise WebhookUrlError(f"only http and https URLs are called, not {parts.scheme or '?'!r}")
    if not parts.hostname:
        raise WebhookUrlError("the URL names no host")
    if parts.username is not None or parts.password is not None:
        raise WebhookUrlError("no credentials in the URL: the secret signs each delivery")
    if port == 0:
        raise WebhookUrlError("port 0 is no port")
    return url
