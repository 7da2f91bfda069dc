"""Report parsers: bytes in, ParsedReport out. Pure; hostile input raises ReportParseError.

`parse_report` is the one entry point: it inflates gzip as a stream under the one size limit
(guarding XML nodes as it goes), detects the format and dispatches through PARSERS. Parser
modules are imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ingest.model import ParsedReport, ReportFormat, ReportParseError
from ingest.parsers.compression import (
    check_plain_size,
    gunzip_chunks,
    is_gzip,
    plain_chunks,
    refuse_containers,
)
from ingest.parsers.detect import detect_format, sniff_xml, utf16_as_utf8, xml_dialect
from ingest.parsers.limits import DEFAULT_LIMITS, ParseLimits
from ingest.parsers.runners import with_runner
from ingest.parsers.xml_guard import NodeGuard

__all__ = ["DEFAULT_LIMITS", "PARSERS", "ParseLimits", "detect_format", "parse_report"]

# format -> (module, function); each function is `(data: bytes, *, filename) -> ParsedReport`.
PARSERS: dict[str, tuple[str, str]] = {
    "junit": ("ingest.parsers.junit", "parse_junit"),
    "durations": ("ingest.parsers.durations", "parse_durations"),
    "laptime-json": ("ingest.parsers.laptime_json", "parse_laptime_json"),
    "nunit": ("ingest.parsers.nunit", "parse_nunit"),
    "trx": ("ingest.parsers.trx", "parse_trx"),
}

Parser = Callable[..., ParsedReport]


def parse_report(
    data: bytes,
    *,
    filename: str | None = None,
    format: str = "auto",
    limits: ParseLimits = DEFAULT_LIMITS,
    runner: str = "auto",
) -> ParsedReport:
    """Parse one report (gzip accepted) of the given or detected format into a ParsedReport.

    `runner` names the test runner (ingest.parsers.runners.RUNNERS) or "auto" to detect it;
    each result's `file` becomes the unit that runner selects."""
    if format != "auto" and format not in PARSERS:
        known = ", ".join(["auto", *PARSERS])
        raise ReportParseError(
            "format-unknown",
            f"unknown format {format!r} (expected one of {known})",
            filename=filename,
        )
    data = read_content(data, limits, filename, xml=format in ("auto", "junit", "nunit", "trx"))
    if not data.strip(b" \t\r\n\x00") or data in (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"):
        raise ReportParseError("empty-report", "the report is empty", filename=filename)
    fmt: ReportFormat = detect_format(data) if format == "auto" else format  # type: ignore[assignment]
    if fmt == "junit" and format == "auto":
        fmt = xml_dialect(data)
    report = parser_for(fmt)(data, filename=filename)
    return with_runner(report, data, filename=filename, runner=runner)


def read_content(data: bytes, limits: ParseLimits, filename: str | None, *, xml: bool) -> bytes:
    """The report's content, inflated when gzipped, under the one size limit.

    Chunks are checked as they are inflated: XML (when `xml` and the content starts like
    XML) goes through the node guard, so a hostile file is refused after one bounded step.
    """
    refuse_containers(data[:8], filename, inside_gzip=False)
    limit = limits.max_decompressed_bytes
    gzipped = is_gzip(data)
    if not gzipped:
        check_plain_size(data, limit, filename)
        if not xml:
            return data
    chunks = gunzip_chunks(data, limit, filename) if gzipped else plain_chunks(data)
    parts: list[bytes] = []  # the inflated content (gzip only: plain content is `data`)
    magic = b""  # the content's first bytes: another compression inside the gzip?
    guard: NodeGuard | None = None
    undecided = xml
    blank_bytes = 0  # leading blanks before the first byte that tells XML from the rest
    for chunk in chunks:
        if gzipped:
            parts.append(chunk)
            if len(magic) < 8:
                magic += chunk[: 8 - len(magic)]
                if len(magic) == 8:
                    refuse_containers(magic, filename, inside_gzip=True)
        if guard is not None:
            guard.feed(chunk)
        elif undecided:
            kind = sniff_xml(chunk, at_start=not blank_bytes)
            if kind is None:
                blank_bytes += len(chunk)
                continue
            undecided = False
            if kind == "xml":
                guard = NodeGuard(limits.max_node_bytes, filename, offset=blank_bytes)
                guard.feed(chunk)
        elif not gzipped:
            break  # plain and not XML: nothing more to check
    if gzipped:
        refuse_containers(magic, filename, inside_gzip=True)  # content under 8 bytes
    content = (parts[0] if len(parts) == 1 else b"".join(parts)) if gzipped else data
    if xml and sniff_xml(content[:4]) == "utf-16":
        # The byte scan cannot see UTF-16 markup: guard the UTF-8 text the XML parser gets.
        NodeGuard(limits.max_node_bytes, filename).feed(utf16_as_utf8(content, filename))
    return content


def parser_for(fmt: str) -> Parser:
    """The parse function registered for a format, imported on first use."""
    module_name, attribute = PARSERS[fmt]
    parser: Parser = getattr(importlib.import_module(module_name), attribute)
    return parser
