"""HMAC-SHA256 signatures of a delivery's exact body, as `X-Laptime-Signature: sha256=<hex>`."""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "X-Laptime-Signature"
PREFIX = "sha256="


def sign(secret: str, body: bytes) -> str:
    """The header value for `body` under `secret`."""
    return PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, header: str | None) -> bool:
    """True when `header` is the signature of `body` under `secret` (constant-time compare)."""
    return header is not None and hmac.compare_digest(sign(secret, body), header.strip())
