"""A real HTTP server on 127.0.0.1 answering from a script, recording every request."""

from __future__ import annotations

import email.parser
import email.policy
import gzip
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def form(self) -> tuple[dict[str, list[str]], dict[str, tuple[str, bytes]]]:
        """Multipart text fields (name -> values) and files (name -> (filename, bytes))."""
        head = f"Content-Type: {self.headers['content-type']}\r\n\r\n".encode()
        message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + self.body)
        fields: dict[str, list[str]] = {}
        files: dict[str, tuple[str, bytes]] = {}
        for part in message.iter_parts():
            name = str(part.get_param("name", header="content-disposition"))
            filename = part.get_filename()
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            if filename:
                files[filename] = (name, payload)
            else:
                fields.setdefault(name, []).append(payload.decode())
        return fields, files

    def report_bytes(self, filename: str) -> bytes:
        return gzip.decompress(self.form()[1][filename][1])


@dataclass
class FakeServer:
    """Answers POSTs and GETs from per-method scripts of (status, json body[, headers]); the
    last repeats."""

    url: str = ""
    posts: list[tuple[Any, ...]] = field(default_factory=list)
    gets: list[tuple[Any, ...]] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)

    def answer(self, method: str) -> tuple[Any, ...]:
        script = self.posts if method == "POST" else self.gets
        return script.pop(0) if len(script) > 1 else script[0]


@contextmanager
def fake_server() -> Iterator[FakeServer]:
    """Start a FakeServer in a thread; stop it on exit."""
    state = FakeServer()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else b""
            state.requests.append(
                Recorded(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
            )
            status, payload, *extra = state.answer(self.command)
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (extra[0] if extra else {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = _serve
        do_GET = _serve

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
