"""The one HTTP call the client makes, on urllib: JSON answers, bearer token, bounded time."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

USER_AGENT = "laptime-ci"
# Built once, at import: the plugin calls the server from inside a test session, and a suite
# may monkeypatch `urllib.request.urlopen` (numpy's does) while its tests run.
_OPENER = urllib.request.build_opener()


class Unreachable(Exception):
    """No HTTP answer at all: refused, reset, DNS, TLS or timeout."""


@dataclass(frozen=True)
class Answer:
    """An HTTP answer, any status; `body` is the decoded JSON or None when it is not JSON."""

    status: int
    body: Any
    text: str
    headers: Mapping[str, str]

    def message(self) -> str:
        """The server's own words: FastAPI's `detail` (validation lists made readable)."""
        body = self.body
        if isinstance(body, dict) and "detail" in body:
            detail = body["detail"]
            if isinstance(detail, list):  # FastAPI validation errors: a list of {loc, msg}
                return "; ".join(
                    f"{'.'.join(str(p) for p in item.get('loc', []))}: {item.get('msg')}"
                    if isinstance(item, dict)
                    else str(item)
                    for item in detail
                )
            return str(detail)
        return self.text.strip()[:500] or f"HTTP {self.status}"


def request(
    method: str,
    url: str,
    *,
    token: str | None,
    data: bytes | None = None,
    content_type: str | None = None,
    timeout_s: float = 30,
) -> Answer:
    """Send one request and return its answer, whatever the status; raises Unreachable."""
    headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if content_type:
        headers["Content-Type"] = content_type
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    try:
        with _OPENER.open(req, timeout=timeout_s) as response:
            return _answer(response.status, response.read(), dict(response.headers.items()))
    except urllib.error.HTTPError as exc:
        try:
            raw = exc.read()
        except OSError:
            raw = b""
        return _answer(exc.code, raw, dict(exc.headers.items()) if exc.headers else {})
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise Unreachable(f"cannot reach {url}: {reason}") from exc


def get_json(url: str, *, token: str | None, timeout_s: float) -> Any:
    """GET `url`'s JSON; raises Unreachable without an answer, RuntimeError("HTTP <status>:
    <the server's words>") for an error status."""
    answer = request("GET", url, token=token, timeout_s=timeout_s)
    if answer.status >= 400:
        raise RuntimeError(f"HTTP {answer.status}: {answer.message()}")
    if answer.body is None:
        raise RuntimeError(f"no JSON answer from {url}")
    return answer.body


def _answer(status: int, raw: bytes, headers: Mapping[str, str]) -> Answer:
    text = raw.decode("utf-8", "replace")
    try:
        body = json.loads(text) if text else None
    except ValueError:
        body = None
    return Answer(status, body, text, {k.lower(): v for k, v in headers.items()})
