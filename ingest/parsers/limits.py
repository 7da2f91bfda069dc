"""How large a report may be: one limit on its content, one on any single XML node."""

from __future__ import annotations

from dataclasses import dataclass

MIB = 1024 * 1024


@dataclass(frozen=True)
class ParseLimits:
    """Size limits every report is parsed under, whatever its transport (plain or gzip).

    `max_decompressed_bytes` bounds the report's content (after gunzip, or as sent when
    plain); `max_node_bytes` bounds any single XML text run, tag, comment, CDATA section or
    processing instruction (it keeps the XML parse linear, see xml_guard).
    """

    max_decompressed_bytes: int = 500 * MIB
    max_node_bytes: int = 16 * MIB


DEFAULT_LIMITS = ParseLimits()
