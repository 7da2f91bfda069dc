"""Format sniffing: which parser a report's first bytes call for."""

from __future__ import annotations

from ingest.model import ReportFormat, ReportParseError

_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")
_WHITESPACE = b" \t\r\n"
_SNIFF_BYTES = 4096


def detect_format(data: bytes) -> ReportFormat:
    """Guess the format from the first non-blank bytes: XML is JUnit, `{` is laptime JSON."""
    head = data[:_SNIFF_BYTES]
    # UTF-16 without a BOM still starts with "<" next to a NUL byte.
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"<\x00", b"\x00<")):
        return "junit"
    for bom in _BOMS:
        if head.startswith(bom):
            head = head[len(bom) :]
            break
    head = head.lstrip(_WHITESPACE)
    if not head:
        if data.strip(_WHITESPACE + b"\xef\xbb\xbf"):
            head = data.lstrip(_WHITESPACE + b"\xef\xbb\xbf")[:1]
        else:
            raise ReportParseError("empty-report", "the report is empty")
    if head.startswith(b"<"):
        return "junit"
    if head.startswith(b"{"):
        return "laptime-json"
    return "durations"
