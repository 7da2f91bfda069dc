"""Report parsers: bytes in, ParsedReport out. Pure; hostile input raises ReportParseError.

`parse_report` is the one entry point: it enforces the size limits, gunzips, detects the
format and dispatches through PARSERS. Parser modules are imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from ingest.model import ParsedReport, ReportFormat, ReportParseError
from ingest.parsers.detect import detect_format
from ingest.parsers.limits import (
    DEFAULT_LIMITS,
    ParseLimits,
    check_compressed_size,
    gunzip_limited,
    is_gzip,
)

__all__ = ["DEFAULT_LIMITS", "PARSERS", "ParseLimits", "detect_format", "parse_report"]

# format -> (module, function); each function is `(data: bytes, *, filename) -> ParsedReport`.
PARSERS: dict[str, tuple[str, str]] = {
    "junit": ("ingest.parsers.junit", "parse_junit"),
    "durations": ("ingest.parsers.durations", "parse_durations"),
    "laptime-json": ("ingest.parsers.laptime_json", "parse_laptime_json"),
}

Parser = Callable[..., ParsedReport]


def parse_report(
    data: bytes,
    *,
    filename: str | None = None,
    format: str = "auto",
    limits: ParseLimits = DEFAULT_LIMITS,
) -> ParsedReport:
    """Parse one report (gzip accepted) of the given or detected format into a ParsedReport."""
    check_compressed_size(data, limits, filename)
    if is_gzip(data):
        data = gunzip_limited(data, limits, filename)
    elif len(data) > limits.max_decompressed_bytes:
        raise ReportParseError(
            "decompressed-too-large",
            f"report is {len(data)} bytes, over the limit of {limits.max_decompressed_bytes}",
            filename=filename,
        )
    if not data.strip(b" \t\r\n\x00") or data in (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"):
        raise ReportParseError("empty-report", "the report is empty", filename=filename)
    fmt: ReportFormat
    if format == "auto":
        fmt = detect_format(data)
    elif format in PARSERS:
        fmt = format  # type: ignore[assignment]
    else:
        known = ", ".join(["auto", *PARSERS])
        raise ReportParseError(
            "format-unknown",
            f"unknown format {format!r} (expected one of {known})",
            filename=filename,
        )
    return parser_for(fmt)(data, filename=filename)


def parser_for(fmt: str) -> Parser:
    """The parse function registered for a format, imported on first use."""
    module_name, attribute = PARSERS[fmt]
    parser: Parser = getattr(importlib.import_module(module_name), attribute)
    return parser
