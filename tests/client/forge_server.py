"""A small real HTTP server imitating GitHub's issue-comment and GitLab's MR-note endpoints;
it keeps the comments and records every request."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

GITHUB_LIST = re.compile(r"^/repos/[^/]+/[^/]+/issues/(\d+)/comments$")
GITHUB_ITEM = re.compile(r"^/repos/[^/]+/[^/]+/issues/comments/(\d+)$")
GITLAB_LIST = re.compile(r"^/api/v4/projects/[^/]+/merge_requests/(\d+)/notes$")
GITLAB_ITEM = re.compile(r"^/api/v4/projects/[^/]+/merge_requests/\d+/notes/(\d+)$")


@dataclass
class Forge:
    """What the imitation holds: comments by id and every (method, path, auth) it saw."""

    url: str
    comments: dict[int, dict[str, Any]] = field(default_factory=dict)
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)


@contextmanager
def forge_server(token: str) -> Iterator[Forge]:
    """Serve on loopback; both forges' routes; 401 without the token."""
    state = Forge(url="")
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def _send(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            auth = self.headers.get("Authorization") or self.headers.get("PRIVATE-TOKEN")
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            with lock:
                state.requests.append((self.command, parts.path, auth))
                state.bodies.append(raw)
                if auth not in (f"Bearer {token}", token):
                    return self._send(401, {"message": "Bad credentials"})
                listing = GITHUB_LIST.match(parts.path) or GITLAB_LIST.match(parts.path)
                item = GITHUB_ITEM.match(parts.path) or GITLAB_ITEM.match(parts.path)
                if listing and self.command == "GET":
                    query = parse_qs(parts.query)
                    page = int(query.get("page", ["1"])[0])
                    per = int(query.get("per_page", ["30"])[0])
                    rows = sorted(state.comments.values(), key=lambda c: c["id"])
                    return self._send(200, rows[(page - 1) * per : page * per])
                if listing and self.command == "POST":
                    new_id = 1000 + len(state.comments)
                    state.comments[new_id] = {"id": new_id, "body": json.loads(raw)["body"]}
                    return self._send(201, state.comments[new_id])
                if item and self.command in ("PATCH", "PUT"):
                    comment = state.comments[int(item.group(1))]
                    comment["body"] = json.loads(raw)["body"]
                    return self._send(200, comment)
                return self._send(404, {"message": "Not Found"})

        do_GET = do_POST = do_PATCH = do_PUT = _handle

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
