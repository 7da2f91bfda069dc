"""A real HTTP receiver for webhook tests: answers each POST with the next scripted status,
keeps what it got, and can hold a request open until the test lets it go."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    """One request as it arrived."""

    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Receiver:
    """The script (statuses, "hold" to keep the request open, "redirect" or "redirect:URL")
    and the record."""

    script: list[int | str]
    url: str = ""
    received: list[Received] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next_step(self) -> int | str:
        with self.lock:
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]


@contextmanager
def receiver(*script: int | str) -> Iterator[Receiver]:
    """A receiver on loopback answering with `script` (its last entry repeats)."""
    state = Receiver(list(script))

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            step = state.next_step()
            with state.lock:
                state.received.append(Received(self.path, dict(self.headers.items()), body))
            if step == "hold":
                state.release.wait(60)
                return
            if isinstance(step, str) and step.startswith("redirect"):
                self.send_response(302)
                # "redirect" goes back to this receiver; "redirect:URL" to URL.
                target = step.partition(":")[2] or f"{state.url}/elsewhere"
                self.send_header("Location", target)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            answer = b"x" * 200_000 if step == 599 else f"status {step}".encode()
            self.send_response(500 if step == 599 else int(step))
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        server.shutdown()
        server.server_close()
