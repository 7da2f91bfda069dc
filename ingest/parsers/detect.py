"""Format sniffing: which parser a report's first bytes call for."""

from __future__ import annotations

import re

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


def sniff_xml(chunk: bytes, *, at_start: bool = True) -> str | None:
    """ "xml" or "utf-16" when the content starts an XML document, "other" when it does not,
    None while `chunk` holds only blanks (the next chunk must tell). `at_start`: `chunk` is
    the content's beginning (UTF-16 and BOMs are looked for there only)."""
    if at_start:
        if chunk.startswith((b"\xff\xfe", b"\xfe\xff", b"<\x00", b"\x00<")):
            return "utf-16"
        if chunk.startswith(b"\xef\xbb\xbf"):
            chunk = chunk[3:]
    stripped = chunk.lstrip(_WHITESPACE)
    if not stripped:
        return None
    return "xml" if stripped.startswith(b"<") else "other"


def utf16_as_utf8(data: bytes, filename: str | None) -> bytes:
    """A UTF-16 document (with or without BOM) re-encoded as UTF-8, its BOM dropped."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        codec = "utf-16"
    else:  # no BOM: the NUL byte's side of the first "<" tells the byte order
        codec = "utf-16-le" if data[1:2] == b"\x00" else "utf-16-be"
    try:
        decoded = data.decode(codec)
    except UnicodeDecodeError as exc:
        raise ReportParseError(
            "encoding-invalid",
            f"bytes are not valid UTF-16 at offset {exc.start}: {exc.reason}",
            filename=filename,
        ) from None
    return decoded.lstrip("\ufeff").encode("utf-8")


# The first element's name, after the XML declaration, comments and processing instructions.
_ROOT = re.compile(rb"<([A-Za-z_][\w.:-]*)")
_DIALECTS: dict[bytes, ReportFormat] = {
    b"test-run": "nunit",
    b"test-results": "nunit",
    b"TestRun": "trx",
}


def xml_dialect(data: bytes) -> ReportFormat:
    """Which XML parser a document calls for, by its root element: NUnit's `<test-run>` /
    `<test-results>`, TRX's `<TestRun>`, else JUnit (which refuses other roots itself)."""
    head = data[:_SNIFF_BYTES]
    if sniff_xml(head[:4]) == "utf-16":
        head = (
            head.decode("utf-16", "ignore").encode("utf-8")
            if head[:2]
            in (
                b"\xff\xfe",
                b"\xfe\xff",
            )
            else head.replace(b"\x00", b"")
        )
    head = re.sub(rb"<!--.*?-->|<\?.*?\?>", b"", head, flags=re.DOTALL)
    match = _ROOT.search(head)
    if match is None:
        return "junit"
    return _DIALECTS.get(match.group(1).split(b":")[-1], "junit")
