"""A linear pre-scan of XML bytes that refuses any single node larger than a cap.

Why: expat (2.5, as bundled) re-tokenizes an unfinished token from its start every time
pyexpat feeds it the next 1 MiB, so one huge comment, tag (attribute values), processing
instruction or name costs time quadratic in its length (a 450 MB comment: 266 s). Refusing
every node over `max_node_bytes` before expat sees it bounds each token, which makes the
whole parse linear in the document's size.

The scan is fed the document chunk by chunk as it is inflated, so a hostile file is refused
after at most one cap of content, and costs O(chunk) per chunk:
- no run of bytes without a `<` may exceed the cap: a text node or a tag (attribute values
  cannot hold `<`) longer than that is refused. Vectorised with numpy, per chunk;
- comments, CDATA sections and processing instructions may hold `<`: each is found by its
  opening string and measured to its terminator (a Python step per such section only).
"""

from __future__ import annotations

import re

import numpy as np

from ingest.model import ReportParseError

_LT = ord("<")
# The openings of the sections that may contain "<", and what ends each.
_SECTION_START = re.compile(rb"<(?:!--|!\[CDATA\[|\?)")
_SECTION_END = {b"<!--": b"-->", b"<![CDATA[": b"]]>", b"<?": b"?>"}
_SECTION_NAME = {b"<!--": "comment", b"<![CDATA[": "CDATA section", b"<?": "processing instruction"}
# Longest opening minus one: bytes kept from a chunk's end in case an opening straddles it.
_KEEP = max(len(start) for start in _SECTION_END) - 1


class NodeGuard:
    """Feed it a document's bytes in order; it raises `node-too-large` on an oversize node."""

    def __init__(self, max_node_bytes: int, filename: str | None = None, offset: int = 0) -> None:
        self.cap = max_node_bytes
        self.filename = filename
        # Bytes fed so far; `offset` counts leading blanks read before the guard was made.
        self.seen = offset
        self.last_lt = 0  # offset just after the last "<" (0: the document's start)
        self.tail = b""  # the unsearched end of the previous chunk (for section openings)
        self.open_start = 0  # offset where the open section begins
        self.open_end: bytes | None = None  # terminator of the open section, if any
        self.open_name = ""

    def feed(self, chunk: bytes) -> None:
        """Scan the next bytes of the document."""
        self._check_sections(chunk)  # first: an oversize comment is named as one
        self._check_gaps(chunk)
        self.seen += len(chunk)

    def _check_gaps(self, chunk: bytes) -> None:
        where = np.flatnonzero(np.frombuffer(chunk, dtype=np.uint8) == _LT)
        if where.size:
            # Distance from each "<" to the previous one: the text plus tag between them.
            gaps = np.diff(where, prepend=self.last_lt - self.seen - 1)
            widest = int(gaps.argmax())
            if gaps[widest] > self.cap:
                self._refuse("text or tag", self.seen + int(where[widest]))
            self.last_lt = self.seen + int(where[-1]) + 1
        if self.seen + len(chunk) - self.last_lt > self.cap:
            self._refuse("text or tag", self.seen + len(chunk))

    def _check_sections(self, chunk: bytes) -> None:
        text = self.tail + chunk
        base = self.seen - len(self.tail)
        at = 0
        while True:
            if self.open_end is not None:
                end = text.find(self.open_end, at)
                if end < 0:
                    if base + len(text) - self.open_start > self.cap:
                        self._refuse(self.open_name, base + len(text))
                    keep = max(at, len(text) - len(self.open_end) + 1)
                    self.tail = text[keep:]
                    return
                at = end + len(self.open_end)
                if base + at - self.open_start > self.cap:
                    self._refuse(self.open_name, base + at)
                self.open_end = None
            found = _SECTION_START.search(text, at)
            if found is None:
                self.tail = text[max(at, len(text) - _KEEP) :]
                return
            opening = found.group()
            self.open_start = base + found.start()
            self.open_end = _SECTION_END[opening]
            self.open_name = _SECTION_NAME[opening]
            at = found.end()

    def _refuse(self, what: str, offset: int) -> None:
        raise ReportParseError(
            "node-too-large",
            f"a single {what} is longer than the limit of {self.cap} bytes "
            f"(found by byte offset {offset}); such reports are refused to keep parsing linear",
            filename=self.filename,
        )
